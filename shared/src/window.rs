//! Promotion windows as addon-controller v1.13.0 evaluates them (`isPromotionWindowOpen`,
//! `docs/reference/promotion-controller.md` §12.4): open iff the most recent `from`
//! activation is strictly in the past and the first `to` activation after it is strictly in the
//! future, with robfig/cron v1.2.0 schedules ([`crate::cron`]) in the zone of `now`.
//!
//! One defect is fixed (D12): where upstream loops forever on a schedule that never fires (its
//! `Next` returns the zero time, which is always in the past), this says so as an error.

use chrono::{DateTime, Duration, TimeZone};

use crate::cron::Schedule;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowState<Tz: TimeZone> {
    /// Open now; `closes` is the first `to` activation after now.
    Open { closes: DateTime<Tz> },
    /// Closed now; `opens` is the next `from` activation, if there is one within five years.
    Closed { opens: Option<DateTime<Tz>> },
}

/// Upstream's wording for a schedule that does not parse: `unparseable schedule "<expr>": <err>`.
fn parse(expr: &str) -> Result<Schedule, String> {
    Schedule::parse(expr).map_err(|e| format!("unparseable schedule {expr:?}: {e}"))
}

/// Whether the window `from`–`to` is open at `now`.
pub fn state<Tz: TimeZone>(
    from: &str,
    to: &str,
    now: &DateTime<Tz>,
) -> Result<WindowState<Tz>, String> {
    let from_s = parse(from)?;
    let to_s = parse(to)?;
    let never = |which: &str, expr: &str| {
        format!("the window's {which} schedule {expr:?} never fires within five years")
    };
    let Some(mut prev_open) = last_at_or_before(&from_s, now) else {
        return Ok(WindowState::Closed {
            opens: from_s.next(now),
        });
    };
    let mut next_close = to_s.next(&prev_open).ok_or_else(|| never("to", to))?;
    if next_close <= *now {
        prev_open = from_s.next(&prev_open).ok_or_else(|| never("from", from))?;
        next_close = to_s.next(&next_close).ok_or_else(|| never("to", to))?;
    }
    while next_close <= *now {
        next_close = to_s.next(&next_close).ok_or_else(|| never("to", to))?;
    }
    if prev_open < *now && *now < next_close {
        Ok(WindowState::Open { closes: next_close })
    } else {
        Ok(WindowState::Closed {
            opens: from_s.next(now),
        })
    }
}

/// The last activation at or before `now`, searching from `now - 366 days` as upstream does.
fn last_at_or_before<Tz: TimeZone>(
    schedule: &Schedule,
    now: &DateTime<Tz>,
) -> Option<DateTime<Tz>> {
    let start = now.clone() - Duration::days(366);
    if let Schedule::Every(secs) = schedule {
        // Activations are start + k·d (nanoseconds dropped): computed, not iterated (an
        // `@every 1s` window would otherwise take 31 million steps).
        let first = schedule.next(&start)?;
        if first > *now {
            return None;
        }
        let steps = (now.clone() - first.clone()).num_seconds() / secs;
        return Some(first + Duration::seconds(steps * secs));
    }
    let mut last = None;
    let mut t = schedule.next(&start)?;
    while t <= *now {
        last = Some(t.clone());
        t = schedule.next(&t)?;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn overnight_window() {
        let (from, to) = ("0 22 * * *", "0 6 * * *");
        assert_eq!(
            state(from, to, &at("2026-03-02T23:00:00Z")).unwrap(),
            WindowState::Open {
                closes: at("2026-03-03T06:00:00Z")
            }
        );
        assert_eq!(
            state(from, to, &at("2026-03-02T12:00:00Z")).unwrap(),
            WindowState::Closed {
                opens: Some(at("2026-03-02T22:00:00Z"))
            }
        );
    }

    #[test]
    fn at_the_opening_second_the_window_reads_closed() {
        assert_eq!(
            state("0 22 * * *", "0 6 * * *", &at("2026-03-02T22:00:00Z")).unwrap(),
            WindowState::Closed {
                opens: Some(at("2026-03-03T22:00:00Z"))
            }
        );
    }

    #[test]
    fn from_equal_to_is_open_except_the_opening_second() {
        assert!(matches!(
            state("0 9 * * *", "0 9 * * *", &at("2026-03-02T15:00:00Z")).unwrap(),
            WindowState::Open { .. }
        ));
    }

    #[test]
    fn a_schedule_that_never_fires_is_an_error_not_a_hang() {
        // Upstream D12: `0 0 30 2 *` never fires and the reconcile worker spins forever.
        let now = at("2026-03-02T15:00:00Z");
        assert_eq!(
            state("0 0 30 2 *", "0 6 * * *", &now).unwrap(),
            WindowState::Closed { opens: None }
        );
        let err = state("0 22 * * *", "0 0 30 2 *", &now).unwrap_err();
        assert!(err.contains("never fires"), "{err}");
    }

    #[test]
    fn unparseable_schedules_are_worded_as_upstream() {
        let err = state("0 22 * *", "0 6 * * *", &at("2026-03-02T15:00:00Z")).unwrap_err();
        assert!(
            err.starts_with("unparseable schedule \"0 22 * *\": expected exactly 5 fields"),
            "{err}"
        );
    }

    #[test]
    fn every_schedules_are_anchored_366_days_back() {
        // `@every 1h`: 366 days is a multiple of an hour, so the last activation is `now` itself
        // (truncated to the second), which is not strictly before now: closed, opening an hour on.
        let now = at("2026-03-02T15:20:30Z");
        assert_eq!(
            state("@every 1h", "0 6 * * *", &now).unwrap(),
            WindowState::Closed {
                opens: Some(at("2026-03-02T16:20:30Z"))
            }
        );
    }
}
