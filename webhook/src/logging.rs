//! Structured logs on stderr, as text or one JSON object per line.
//!
//! Lines are formatted on the request's thread and written in batches by a dedicated thread
//! ([`crate::log_writer`]), so neither a write nor a thread wake-up is on the request path;
//! nothing is dropped, and the returned guard writes what is buffered when the process ends.

use std::fmt;

use serde::ser::{SerializeMap, Serializer as _};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

use chrono::{DateTime, Datelike, Timelike, Utc};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;
use crate::config::LogConfig;
use crate::log_writer::{self, FlushGuard};

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("invalid --log-level {filter:?}: {reason}")]
    Filter { filter: String, reason: String },
    #[error("cannot start the log writer thread: {0}")]
    Writer(std::io::Error),
    #[error("cannot install the logger: {0}")]
    Install(String),
}

/// Install the subscriber; keep the guard alive until exit.
pub fn init(config: &LogConfig) -> Result<FlushGuard, LoggingError> {
    let filter = EnvFilter::try_new(&config.filter).map_err(|e| LoggingError::Filter {
        filter: config.filter.clone(),
        reason: e.to_string(),
    })?;
    let (writer, guard) = log_writer::spawn(std::io::stderr()).map_err(LoggingError::Writer)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_timer(LogTime);
    let installed = match config.format {
        LogFormat::Text => builder.with_ansi(false).try_init(),
        LogFormat::Json => builder
            .json()
            .event_format(JsonLines::new(LogTime))
            .try_init(),
    };
    installed.map_err(|e| LoggingError::Install(e.to_string()))?;
    Ok(guard)
}

/// The time of a log line exactly as tracing-subscriber's `SystemTime` writes it
/// (`2026-11-29T06:00:00.123456Z`), with its digits written directly: formatting the time
/// through `fmt` was the largest part of an access-log line's cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogTime;

impl FormatTime for LogTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let now = Utc::now();
        match rfc3339_micros(now) {
            Some(bytes) => w.write_str(std::str::from_utf8(&bytes).map_err(|_| fmt::Error)?),
            // Years of five digits or before year 0: the stock formatter's own way.
            None => SystemTime.format_time(w),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, for years 0 to 9999.
fn rfc3339_micros(time: DateTime<Utc>) -> Option<[u8; 27]> {
    let year = u32::try_from(time.year()).ok().filter(|y| *y <= 9999)?;
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: usize, width: usize, mut value: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, time.month());
    put(8, 2, time.day());
    put(11, 2, time.hour());
    put(14, 2, time.minute());
    // A leap second (chrono counts it in the nanoseconds) is written as second 60, as a
    // SystemTime never shows it; `Utc::now` does not return one.
    put(17, 2, time.second() + time.nanosecond() / 1_000_000_000);
    put(20, 6, (time.nanosecond() % 1_000_000_000) / 1_000);
    Some(out)
}

/// tracing-subscriber's JSON lines (`json().flatten_event(true).with_current_span(false)`), byte
/// for byte, written faster for the events it can: one line per admission made that formatter
/// a tenth of the server's CPU per request, most of it in handing every JSON token to the line
/// buffer through an `io::Write` adaptor that checks each token for UTF-8 again. Here the same
/// serializer (serde_json, compact) writes into a byte buffer, checked once.
///
/// Only events outside any span, and not forwarded from the `log` crate, take this way (the
/// webhook's own events); the others, whose lines hold span lists or normalized `log` metadata,
/// are left to tracing-subscriber's own formatter.
pub struct JsonLines<T> {
    timer: T,
    stock: Format<Json, T>,
}

impl<T: FormatTime + Clone> JsonLines<T> {
    pub fn new(timer: T) -> Self {
        let stock = tracing_subscriber::fmt::format()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_timer(timer.clone());
        JsonLines { timer, stock }
    }
}

impl<S, N, T> FormatEvent<S, N> for JsonLines<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
    T: FormatTime,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        // The span the stock formatter would list, found the way it finds it.
        let in_span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .is_some();
        if in_span || meta.fields().field("log.target").is_some() {
            return self.stock.format_event(ctx, writer, event);
        }
        let mut timestamp = String::new();
        self.timer.format_time(&mut Writer::new(&mut timestamp))?;
        let mut line = Vec::with_capacity(512);
        let mut serializer = serde_json::Serializer::new(&mut line);
        let mut map = serializer.serialize_map(None).map_err(|_| fmt::Error)?;
        map.serialize_entry("timestamp", &timestamp)
            .map_err(|_| fmt::Error)?;
        map.serialize_entry("level", meta.level().as_str())
            .map_err(|_| fmt::Error)?;
        let mut fields = Fields { map, state: Ok(()) };
        event.record(&mut fields);
        let Fields { mut map, state } = fields;
        state.map_err(|_| fmt::Error)?;
        map.serialize_entry("target", meta.target())
            .map_err(|_| fmt::Error)?;
        map.end().map_err(|_| fmt::Error)?;
        // serde_json writes UTF-8 only; the check is one pass over the finished line.
        writer.write_str(std::str::from_utf8(&line).map_err(|_| fmt::Error)?)?;
        writeln!(writer)
    }
}

/// An event's fields as entries of the line's object, each value as tracing-serde's visitor
/// (which the stock formatter uses) writes it: booleans and numbers as JSON values, strings as
/// strings, anything else as a string of its `Debug` form; after a failure nothing more.
struct Fields<M> {
    map: M,
    state: Result<(), serde_json::Error>,
}

impl<M: SerializeMap<Error = serde_json::Error>> Fields<M> {
    fn entry(&mut self, field: &Field, value: &impl serde::Serialize) {
        if self.state.is_ok() {
            self.state = self.map.serialize_entry(field.name(), value);
        }
    }
}

impl<M: SerializeMap<Error = serde_json::Error>> Visit for Fields<M> {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.entry(field, &value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.entry(field, &format_args!("{value:?}"));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.entry(field, &value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.entry(field, &value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.entry(field, &value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.entry(field, &value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone)]
    struct FixedTime(&'static str);

    const TIME: FixedTime = FixedTime("2026-11-29T06:00:00.123456Z");

    impl FormatTime for FixedTime {
        fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
            w.write_str(self.0)
        }
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Events of every kind of field, escapes, and events inside spans.
    fn emit() {
        #[derive(Debug)]
        struct Odd {
            _text: &'static str,
        }
        let error = std::io::Error::other("disk \"full\"\n\u{1b}[31m");
        tracing::info!(
            endpoint = "validate",
            uid = "a\"b\\c\u{7}\u{7f}é\u{2028}",
            allowed = true,
            code = 422u16,
            count = 7usize,
            negative = -5i64,
            ratio = 0.25f64,
            nan = f64::NAN,
            big = u128::MAX,
            odd = ?Odd { _text: "x\ty" },
            shown = %"display \"quoted\"",
            "admission"
        );
        tracing::warn!(status = 408u16, error = %error, "admission request failed");
        tracing::error!(
            error = &error as &(dyn std::error::Error + 'static),
            "with an error value"
        );
        tracing::info!("a message with {} and \"quotes\"", "arguments");
        tracing::info!(only = "fields");
        let span = tracing::info_span!("outer", id = 3u64, name = "x\"y");
        span.in_scope(|| tracing::info!(inside = true, "in a span"));
        let child = tracing::info_span!(parent: &span, "child");
        tracing::info!(parent: &child, "explicit parent");
    }

    /// The lines `emit` writes, through `JsonLines` or else the stock formatter.
    fn lines(ours: Option<JsonLines<FixedTime>>) -> String {
        let captured = Captured::default();
        let sink = captured.clone();
        let builder = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_max_level(tracing::Level::TRACE)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_timer(TIME);
        match ours {
            Some(ours) => {
                tracing::subscriber::with_default(builder.event_format(ours).finish(), emit)
            }
            None => tracing::subscriber::with_default(builder.finish(), emit),
        }
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn json_lines_are_exactly_what_tracing_subscriber_writes() {
        let stock = lines(None);
        assert_eq!(stock.lines().count(), 7, "{stock}");
        assert!(stock.contains(r#""spans":["#), "{stock}");
        assert_eq!(lines(Some(JsonLines::new(TIME))), stock);

        // Which lines were written here and which were left to the stock formatter: its clock
        // tells them apart.
        let mut ours = JsonLines::new(TIME);
        ours.stock = ours.stock.with_timer(FixedTime("stock"));
        let marked = lines(Some(ours));
        let by_stock: Vec<bool> = marked.lines().map(|l| l.contains("stock")).collect();
        assert_eq!(
            by_stock,
            [false, false, false, false, false, true, true],
            "only the lines in spans are the stock formatter's: {marked}"
        );
    }

    #[test]
    fn log_time_is_written_as_tracing_subscriber_writes_it() {
        use chrono::TimeZone;
        for (seconds, nanos) in [
            (0i64, 0u32),
            (1_796_000_000, 123_456_789),
            (1_796_000_059, 999_999_999),
            (951_782_400, 5_000),     // 2000-02-29
            (253_402_300_799, 1_000), // 9999-12-31T23:59:59
            (-62_167_219_200, 0),     // 0000-01-01
        ] {
            let time = Utc.timestamp_opt(seconds, nanos).unwrap();
            let ours = rfc3339_micros(time).unwrap();
            let want = time.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
            assert_eq!(std::str::from_utf8(&ours).unwrap(), want);
        }
        assert_eq!(
            rfc3339_micros(Utc.timestamp_opt(253_402_300_800, 0).unwrap()),
            None,
            "year 10000 is left to the stock formatter"
        );

        // Against the stock timer itself: the same text up to the second (read again if the
        // second turned between the two readings) and the same shape after it.
        let read = |timer: &dyn FormatTime| {
            let mut text = String::new();
            timer.format_time(&mut Writer::new(&mut text)).unwrap();
            text
        };
        let (ours, stock) = loop {
            let (ours, stock) = (read(&LogTime), read(&SystemTime));
            if ours[..19] == stock[..19] {
                break (ours, stock);
            }
        };
        assert_eq!(ours.len(), stock.len(), "{ours} / {stock}");
        assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
    }
}
