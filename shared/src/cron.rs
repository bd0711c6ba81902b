//! robfig/cron v1.2.0, as Sveltos uses it for promotion windows: `ParseStandard` (five fields
//! or a descriptor, no seconds, no time-zone prefix) and `Schedule.Next`. Verdicts and error texts
//! are checked against robfig/cron's own test tables (`shared/tests/schedule_parity.rs`).

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike};

use go_text::duration::parse_go_duration;

/// A parsed schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// `SpecSchedule`: one bit per allowed value of each field (seconds are always 0).
    Spec(Spec),
    /// `@every D`: `ConstantDelaySchedule`, in whole seconds.
    Every(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

/// Set on a day field written `*` or `?`: then both day fields must match, else either.
const STAR_BIT: u64 = 1 << 63;

impl Schedule {
    /// `Next(t)`: the first activation strictly after `t`, in `t`'s zone; `None` where robfig
    /// returns the zero time (nothing within five years).
    pub fn next<Tz: TimeZone>(&self, t: &DateTime<Tz>) -> Option<DateTime<Tz>> {
        match self {
            Schedule::Every(secs) => {
                let t = t.clone() - Duration::nanoseconds(i64::from(t.nanosecond()));
                t.checked_add_signed(Duration::seconds(*secs))
            }
            Schedule::Spec(spec) => spec.next(t),
        }
    }
}

impl Spec {
    fn day_matches<Tz: TimeZone>(&self, t: &DateTime<Tz>) -> bool {
        let dom = (1u64 << t.day()) & self.dom != 0;
        let dow = (1u64 << t.weekday().num_days_from_sunday()) & self.dow != 0;
        if self.dom & STAR_BIT != 0 || self.dow & STAR_BIT != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// robfig/cron v1.2.0 `SpecSchedule.Next`, step for step: move to the next matching month,
    /// day, hour and minute, wrapping to the year when a field rolls over. Local times that do
    /// not exist in the zone (a DST gap) take the earliest valid instant after them.
    fn next<Tz: TimeZone>(&self, t: &DateTime<Tz>) -> Option<DateTime<Tz>> {
        let zone = t.timezone();
        let at = |y: i32, mo: u32, d: u32, h: u32, mi: u32| -> Option<DateTime<Tz>> {
            let naive = NaiveDate::from_ymd_opt(y, mo, d)?.and_hms_opt(h, mi, 0)?;
            (0..=120).find_map(|skip| {
                zone.from_local_datetime(&(naive + Duration::minutes(skip)))
                    .earliest()
            })
        };
        // The upcoming second.
        let mut t =
            t.clone() + Duration::seconds(1) - Duration::nanoseconds(i64::from(t.nanosecond()));
        let mut added = false;
        let year_limit = t.year() + 5;
        'wrap: loop {
            if t.year() > year_limit {
                return None;
            }
            while (1u64 << t.month()) & self.month == 0 {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), 1, 0, 0)?;
                }
                let (y, m) = if t.month() == 12 {
                    (t.year() + 1, 1)
                } else {
                    (t.year(), t.month() + 1)
                };
                t = at(y, m, 1, t.hour(), t.minute())?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&t) {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), t.day(), 0, 0)?;
                }
                let next_day = t.date_naive().succ_opt()?;
                t = at(
                    next_day.year(),
                    next_day.month(),
                    next_day.day(),
                    t.hour(),
                    t.minute(),
                )?;
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while (1u64 << t.hour()) & self.hour == 0 {
                if !added {
                    added = true;
                    t = at(t.year(), t.month(), t.day(), t.hour(), 0)?;
                }
                t += Duration::hours(1);
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while (1u64 << t.minute()) & self.minute == 0 {
                if !added {
                    added = true;
                    t = t.clone()
                        - Duration::seconds(i64::from(t.second()))
                        - Duration::nanoseconds(i64::from(t.nanosecond()));
                }
                t += Duration::minutes(1);
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            // Seconds: ParseStandard allows only 0.
            if t.second() != 0 {
                if !added {
                    t = t.clone() - Duration::nanoseconds(i64::from(t.nanosecond()));
                }
                t = t.clone() + Duration::seconds(60 - i64::from(t.second()));
                if t.minute() == 0 {
                    continue 'wrap;
                }
                continue 'wrap;
            }
            return Some(t);
        }
    }
}

struct Bounds {
    name: &'static str,
    min: u64,
    max: u64,
    /// Names and the numbers they stand for (lower case).
    names: &'static [(&'static str, u64)],
}

const MONTHS: [(&str, u64); 12] = [
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: [(&str, u64); 7] = [
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

const FIELDS: [Bounds; 5] = [
    Bounds {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Bounds {
        name: "day of week",
        min: 0,
        max: 6,
        names: &DAYS,
    },
];

const DESCRIPTORS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

impl Schedule {
    /// robfig/cron v1.2.0 `ParseStandard`: five fields, or a descriptor.
    pub fn parse(spec: &str) -> Result<Schedule, String> {
        if spec.is_empty() {
            return Err("empty cron expression".into());
        }
        if spec.starts_with('@') {
            if let Some(schedule) = descriptor(spec) {
                return Ok(schedule);
            }
            // The rest goes to ParseDuration as is: `@every  5m` (two spaces) is an error.
            if let Some(d) = spec.strip_prefix("@every ") {
                let ns = parse_go_duration(d)
                    .map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
                // `Every`: rounded down to whole seconds, at least one second.
                let secs = (ns / 1_000_000_000).max(1);
                return Ok(Schedule::Every(i64::try_from(secs).unwrap_or(i64::MAX)));
            }
            return Err(format!(
                "unrecognized descriptor: {spec} (expected one of {} or @every <duration>)",
                DESCRIPTORS.join(", ")
            ));
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields (minute hour day-of-month month day-of-week), found {}: {spec}",
                fields.len()
            ));
        }
        let mut bits = [0u64; 5];
        for ((field, bounds), out) in fields.iter().zip(FIELDS.iter()).zip(bits.iter_mut()) {
            // `strings.FieldsFunc(field, ',')`: empty list elements are dropped, not errors.
            for part in field.split(',').filter(|p| !p.is_empty()) {
                *out |= parse_range(part, bounds)
                    .map_err(|e| format!("{} field \"{field}\": {e}", bounds.name))?;
            }
        }
        let [minute, hour, dom, month, dow] = bits;
        Ok(Schedule::Spec(Spec {
            minute,
            hour,
            dom,
            month,
            dow,
        }))
    }
}

/// `getRange`: `number | number "-" number [ "/" number ]`, `*` or `?` for the whole range
/// (which also sets the star bit). Returns the field's bits.
fn parse_range(expr: &str, b: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let star = low_high[0] == "*" || low_high[0] == "?";
    let (start, mut end) = if star {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_high[0], b)?;
        let end = match low_high.len() {
            1 => start,
            2 => int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_uint(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({})",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({})", b.max));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end})"
        ));
    }
    if step == 0 {
        return Err("step of range should be a positive number".into());
    }
    let extra = if star { STAR_BIT } else { 0 };
    Ok(bits(start, end, step) | extra)
}

/// `getBits`: the bits from `min` to `max` every `step`.
fn bits(min: u64, max: u64, step: u64) -> u64 {
    (min..=max)
        .step_by(step as usize)
        .fold(0, |acc, i| acc | (1 << i))
}

/// `all(r)`: every value of a field, with the star bit.
fn all(b: &Bounds) -> u64 {
    bits(b.min, b.max, 1) | STAR_BIT
}

/// The descriptors of `parseDescriptor`.
fn descriptor(spec: &str) -> Option<Schedule> {
    let [minute, hour, dom, month, dow] = &FIELDS;
    let one = |v: u64| 1u64 << v;
    let (m, h, d, mo, w) = match spec {
        "@yearly" | "@annually" => (one(0), one(0), one(1), one(1), all(dow)),
        "@monthly" => (one(0), one(0), one(1), all(month), all(dow)),
        "@weekly" => (one(0), one(0), all(dom), all(month), one(0)),
        "@daily" | "@midnight" => (one(0), one(0), all(dom), all(month), all(dow)),
        "@hourly" => (one(0), all(hour), all(dom), all(month), all(dow)),
        _ => return None,
    };
    let _ = minute;
    Some(Schedule::Spec(Spec {
        minute: m,
        hour: h,
        dom: d,
        month: mo,
        dow: w,
    }))
}

fn int_or_name(s: &str, b: &Bounds) -> Result<u64, String> {
    let lower = s.to_lowercase();
    if let Some((_, n)) = b.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    parse_uint(s)
}

/// `mustParseInt`: Go `strconv.Atoi` (64-bit, optional sign), then no negatives.
fn parse_uint(s: &str) -> Result<u64, String> {
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => Ok(n.unsigned_abs()),
        Err(_) => Err(format!("failed to parse int from {s:?}")),
    }
}
