//! The real `promotion-controller run` as a child process of a test: its JSON log lines followed
//! as they are written, its listeners' addresses read from its own "listening" line, killed (as
//! a crash) or stopped (SIGTERM, as a rollout of the Deployment would) on demand.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bins::{self, BinError};

pub struct ControllerProcess {
    child: Child,
    lines: Receiver<((), String)>,
    seen: Vec<Value>,
    pub metrics: String,
    pub health: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error(transparent)]
    Bin(#[from] BinError),
    #[error("starting promotion-controller: {0}")]
    Spawn(std::io::Error),
    #[error("promotion-controller never logged {what:?}; its log:\n{log}")]
    NoLine { what: String, log: String },
}

impl ControllerProcess {
    /// `promotion-controller run --kubeconfig KUBECONFIG` with listeners on free loopback ports
    /// and `extra` flags; returns once it has logged where it listens.
    pub fn start(kubeconfig: &Path, extra: &[&str]) -> Result<ControllerProcess, ControllerError> {
        Self::start_with_env(kubeconfig, extra, &[])
    }

    /// [`Self::start`] with environment variables set for the process (the crash injection's
    /// `PROMOTION_CONTROLLER_FAULT`, say).
    pub fn start_with_env(
        kubeconfig: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<ControllerProcess, ControllerError> {
        let binary = bins::binary("promotion-controller")?;
        // Debug lines (each decision's explanation) unless the caller chose a level.
        let level: &[&str] = if extra.contains(&"--log-level") {
            &[]
        } else {
            &["--log-level", "info,promotion_controller=debug"]
        };
        let mut child = Command::new(binary)
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "--metrics-listen",
                "127.0.0.1:0",
                "--health-listen",
                "127.0.0.1:0",
            ])
            .args(level)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(ControllerError::Spawn)?;
        let (tx, lines) = std::sync::mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            bins::forward_lines((), stderr, tx);
        }
        let mut process = ControllerProcess {
            child,
            lines,
            seen: Vec::new(),
            metrics: String::new(),
            health: String::new(),
        };
        let listening = process.wait_line("listening", Duration::from_secs(60), |l| {
            l.get("message").and_then(Value::as_str) == Some("listening")
        })?;
        let text = |k: &str| {
            listening
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        process.metrics = text("metrics");
        process.health = text("health");
        Ok(process)
    }

    /// The first log line (from the start) that `matches`, waiting up to `timeout` for it.
    pub fn wait_line(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Result<Value, ControllerError> {
        if let Some(found) = self.seen.iter().find(|l| matches(l)) {
            return Ok(found.clone());
        }
        self.wait_next_line(what, timeout, matches)
    }

    /// The first line that `matches` among those not read yet (by [`Self::wait_line`] or
    /// [`Self::log`]): what a test waits for after it changed something, when an earlier line
    /// would match too.
    pub fn wait_next_line(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Result<Value, ControllerError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(((), line)) => {
                    let value: Value = serde_json::from_str(line.trim())
                        .unwrap_or_else(|_| Value::String(line.trim().to_string()));
                    self.seen.push(value.clone());
                    if matches(&value) {
                        return Ok(value);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(ControllerError::NoLine {
                        what: what.to_string(),
                        log: self.log(),
                    })
                }
            }
        }
    }

    /// Every line logged so far.
    pub fn log(&mut self) -> String {
        while let Ok(((), line)) = self.lines.try_recv() {
            let value: Value = serde_json::from_str(line.trim())
                .unwrap_or_else(|_| Value::String(line.trim().to_string()));
            self.seen.push(value);
        }
        self.seen
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The exit status, once the process has ended on its own.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: a crash, nothing released.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and the exit status once it has shut down.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        self.signal_term();
        self.child.wait().ok()
    }

    /// SIGTERM, and the exit status if it shuts down within `bound` (a liveness bound: a
    /// process that hangs on shutdown is killed and reported as `None`).
    pub fn terminate_within(&mut self, bound: Duration) -> Option<std::process::ExitStatus> {
        self.signal_term();
        let deadline = Instant::now() + bound;
        loop {
            // Polled: the exit is the condition waited for, `bound` only ends a hang.
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    self.kill();
                    return None;
                }
            }
        }
    }

    fn signal_term(&self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Poll `check` (each call reads the cluster) until it returns `Some`, for at most `timeout`:
/// how a scenario waits for a reconciler's reaction without sleeping in its place.
pub fn eventually<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Result<T, String> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(format!("{what}: not within {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
