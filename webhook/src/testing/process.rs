//! `promotion-webhook serve` as a child process.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::certs::{generate_certs, CertFiles};
use super::log::{render, Keep, Log};
use super::TestingError;

/// Generous: a debug build started while other tests compile can take seconds.
const STARTUP: Duration = Duration::from_secs(60);

/// The namespace a started webhook is told it runs in (`POD_NAMESPACE`), as the default install
/// tells it: promotion-controller there is
/// `system:serviceaccount:kubectl-promotion-system:promotion-controller`. [`Launch::env`] with
/// `POD_NAMESPACE` replaces it.
pub const NAMESPACE: &str = "kubectl-promotion-system";

/// How to start one webhook. Without [`Launch::tls`], a fresh pair from [`generate_certs`] is
/// served from a temporary directory that lives as long as the [`Webhook`]. The process runs
/// with `POD_NAMESPACE` [`NAMESPACE`] unless [`Launch::env`] says otherwise.
pub struct Launch {
    bin: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    tls: Option<(PathBuf, PathBuf, String)>,
    shutdown_delay: Duration,
    keep: Keep,
}

impl Launch {
    pub fn new(bin: impl Into<PathBuf>) -> Self {
        Launch {
            bin: bin.into(),
            args: Vec::new(),
            env: Vec::new(),
            tls: None,
            shutdown_delay: Duration::ZERO,
            keep: Keep::All,
        }
    }

    /// Extra `serve` flags (not `--shutdown-delay`: see [`Launch::shutdown_delay`]).
    pub fn args<S: AsRef<std::ffi::OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Serve these files; `ca_pem` is what verifies them.
    pub fn tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>, ca_pem: &str) -> Self {
        self.tls = Some((cert.into(), key.into(), ca_pem.to_string()));
        self
    }

    /// `--shutdown-delay`; zero unless set, since tests do not wait for endpoint propagation
    /// unless they are about it.
    pub fn shutdown_delay(mut self, delay: Duration) -> Self {
        self.shutdown_delay = delay;
        self
    }

    /// Keep no log after the `listening` line (for load runs: one line per admission).
    pub fn discard_access_log(mut self) -> Self {
        self.keep = Keep::UntilListening;
        self
    }

    /// Start the server and return once it reports its addresses.
    pub fn start(self) -> Result<Webhook, TestingError> {
        let (cert, key, ca_pem, certs_dir) = match self.tls {
            Some((cert, key, ca_pem)) => (cert, key, ca_pem, None),
            None => {
                let dir = tempfile::tempdir().map_err(TestingError::TempDir)?;
                let files: CertFiles = generate_certs(&self.bin, dir.path(), &[])?;
                let ca_pem = files.ca_pem()?;
                (files.cert, files.key, ca_pem, Some(dir))
            }
        };
        let mut command = Command::new(&self.bin);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(["--metrics-listen", "127.0.0.1:0", "--log-format", "json"])
            .arg("--shutdown-delay")
            .arg(format!("{}ms", self.shutdown_delay.as_millis()))
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-key-file")
            .arg(&key)
            .args(&self.args)
            .env(crate::config::POD_NAMESPACE_ENV, NAMESPACE)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let described = format!("{command:?}");
        let mut child = command.spawn().map_err(|source| TestingError::Spawn {
            command: described,
            source,
        })?;
        let log = match child.stderr.take() {
            Some(stderr) => Log::follow(stderr, self.keep),
            None => Log::follow(std::io::empty(), self.keep),
        };
        // Owned from here on, so that an early return below still kills the process.
        let mut webhook = Webhook {
            child,
            https: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics: SocketAddr::from(([127, 0, 0, 1], 0)),
            ca_pem,
            log,
            _certs: certs_dir,
        };
        let listening =
            webhook.wait_for_log("`listening` line", STARTUP, |l| l["message"] == "listening")?;
        webhook.https = address(&listening, "https")?;
        webhook.metrics = address(&listening, "metrics")?;
        Ok(webhook)
    }
}

fn address(line: &Value, field: &'static str) -> Result<SocketAddr, TestingError> {
    line[field]
        .as_str()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| TestingError::NoAddress {
            field,
            line: line.to_string(),
        })
}

/// A running `promotion-webhook serve`, killed (and reaped) when dropped.
pub struct Webhook {
    child: Child,
    /// The admission listener (HTTPS).
    pub https: SocketAddr,
    /// The plain-HTTP listener: /metrics, /healthz, /readyz.
    pub metrics: SocketAddr,
    /// The CA certificate that verifies the served pair.
    pub ca_pem: String,
    log: Arc<Log>,
    _certs: Option<tempfile::TempDir>,
}

impl Webhook {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every log line so far (a line that is not JSON is `{"raw": line}`).
    pub fn logs(&self) -> Vec<Value> {
        self.log.lines()
    }

    /// The first log line matching `wanted`, waiting up to `timeout` for it (the server writes its
    /// log in batches, a few milliseconds after the event). `what` names it in the error.
    pub fn wait_for_log(
        &self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, TestingError> {
        self.log.wait_for(what, timeout, wanted)
    }

    /// A plain HTTP/1.1 GET on the metrics listener: status code and body.
    pub fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect_timeout(&self.metrics, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.metrics
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let code = response
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Ok((code, body))
    }

    /// Wait until /readyz answers 200.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), TestingError> {
        let deadline = Instant::now() + timeout;
        loop {
            if matches!(self.get("/readyz"), Ok((200, _))) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TestingError::Timeout {
                    what: "200 from /readyz".into(),
                    timeout,
                    log: render(&self.logs()),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send SIGTERM, as the kubelet does to a terminating pod.
    pub fn sigterm(&self) -> Result<(), TestingError> {
        let pid = self.pid();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .map_err(|e| TestingError::Signal {
                pid,
                reason: e.to_string(),
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(TestingError::Signal {
                pid,
                reason: format!("kill -TERM {status}"),
            })
        }
    }

    /// Wait up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, TestingError> {
        let deadline = Instant::now() + timeout;
        let pid = self.pid();
        loop {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|source| TestingError::Wait { pid, source })?
            {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                return Err(TestingError::Timeout {
                    what: "exit".into(),
                    timeout,
                    log: render(&self.logs()),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then wait up to `timeout` for a clean exit; killed if it does not come.
    pub fn stop(mut self, timeout: Duration) -> Result<ExitStatus, TestingError> {
        self.sigterm()?;
        self.wait_exit(timeout)
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
