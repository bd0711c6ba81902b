//! The server's stderr, read on its own thread for the life of the process (so logging never
//! blocks the server), kept as JSON values, with waits that wake on every new line.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::TestingError;

/// Lines the server logged so far.
#[derive(Default)]
pub(super) struct Log {
    state: Mutex<State>,
    /// Signalled on every new line and when the stream ends.
    changed: Condvar,
}

#[derive(Default)]
struct State {
    lines: Vec<Value>,
    ended: bool,
}

/// What to keep after the `listening` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keep {
    /// Every line, parsed.
    All,
    /// Nothing: the rest is read and dropped unparsed, the way a container runtime ships logs
    /// off, so that a benchmark spends no client CPU on the server's access log.
    UntilListening,
}

impl Log {
    /// Start reading `stream` on a new thread.
    pub(super) fn follow(stream: impl Read + Send + 'static, keep: Keep) -> Arc<Log> {
        let log = Arc::new(Log::default());
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                let value = serde_json::from_str(line.trim_end())
                    .unwrap_or_else(|_| json!({ "raw": line.trim_end() }));
                let listening = value["message"] == "listening";
                sink.push(value);
                line.clear();
                if listening && keep == Keep::UntilListening {
                    let _ = std::io::copy(&mut reader, &mut std::io::sink());
                    break;
                }
            }
            sink.end();
        });
        log
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The reader thread only pushes complete values; a poisoned lock still holds them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, value: Value) {
        self.lock().lines.push(value);
        self.changed.notify_all();
    }

    fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    pub(super) fn lines(&self) -> Vec<Value> {
        self.lock().lines.clone()
    }

    /// The first line matching `wanted`, waiting up to `timeout` for it.
    pub(super) fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, TestingError> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if let Some(line) = state.lines.iter().find(|l| wanted(l)) {
                return Ok(line.clone());
            }
            if state.ended {
                return Err(TestingError::LogEnded {
                    what: what.to_string(),
                    log: render(&state.lines),
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TestingError::Timeout {
                    what: what.to_string(),
                    timeout,
                    log: render(&state.lines),
                });
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

pub(super) fn render(lines: &[Value]) -> String {
    lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_end_on_the_line_on_the_end_of_the_log_or_at_the_deadline() {
        let (reader, mut writer) = std::io::pipe().expect("pipe");
        let log = Log::follow(reader, Keep::All);
        let writing = std::thread::spawn(move || {
            use std::io::Write;
            writeln!(writer, r#"{{"message": "first"}}"#).expect("write");
            writeln!(writer, "not json").expect("write");
            writeln!(writer, r#"{{"message": "listening", "https": "x"}}"#).expect("write");
        });
        let line = log
            .wait_for("listening", Duration::from_secs(30), |l| {
                l["message"] == "listening"
            })
            .expect("the line arrives");
        assert_eq!(line["https"], "x");
        writing.join().expect("writer");
        let err = log
            .wait_for("a line that never comes", Duration::from_secs(30), |l| {
                l["message"] == "never"
            })
            .expect_err("the log ends without it");
        assert!(matches!(err, TestingError::LogEnded { .. }), "{err}");
        assert_eq!(log.lines()[1], json!({"raw": "not json"}));
        assert!(err.to_string().contains("not json"), "{err}");
    }

    #[test]
    fn a_wait_on_an_open_log_ends_at_its_deadline() {
        let (reader, _writer) = std::io::pipe().expect("pipe");
        let log = Log::follow(reader, Keep::All);
        let err = log
            .wait_for("anything", Duration::from_millis(1), |_| true)
            .expect_err("nothing was written");
        assert!(matches!(err, TestingError::Timeout { .. }), "{err}");
    }
}
