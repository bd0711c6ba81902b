//! Child processes that never outlive the test binary: each is stopped by its PID when its
//! handle drops (also while a panicking test unwinds), and on Linux the kernel kills it with
//! SIGKILL if the test binary dies without running destructors (abort, SIGKILL, a second panic).
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process, and
//! test harnesses run every test on its own short-lived thread. So children are forked by one
//! supervisor thread that lives as long as the process.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// A running child; stopped (SIGKILL, then reaped) when dropped.
#[derive(Debug)]
pub struct Supervised {
    name: String,
    child: Child,
}

impl Supervised {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's stderr, when it was piped (once).
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kill the process by its PID and reap it. Idempotent.
    pub fn stop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
        }
        // Reaping is bounded: a process in uninterruptible sleep must not hang the test binary.
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.exited().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Start `command` from the supervisor thread, with the parent-death signal set.
pub fn spawn(name: &str, command: Command) -> io::Result<Supervised> {
    spawn_with_death_signal(name, command, libc::SIGKILL)
}

/// [`spawn`] with another parent-death signal: one the child traps, to stop children of its own
/// that the kernel would not (the browser harness's chromedriver and Chromium).
pub fn spawn_with_death_signal(
    name: &str,
    mut command: Command,
    signal: libc::c_int,
) -> io::Result<Supervised> {
    set_parent_death_signal(&mut command, signal);
    let (reply_tx, reply_rx) = mpsc::channel();
    supervisor()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("the process supervisor thread is gone"))?;
    let child = reply_rx
        .recv()
        .map_err(|_| io::Error::other("the process supervisor thread is gone"))??;
    Ok(Supervised {
        name: name.to_string(),
        child,
    })
}

fn supervisor() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SUPERVISOR: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SUPERVISOR.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        // The sender lives in a static, so `recv` never fails and the thread (the children's
        // parent for PR_SET_PDEATHSIG) lives until the process ends.
        let spawned = std::thread::Builder::new()
            .name("envtest-supervisor".into())
            .spawn(move || {
                while let Ok((mut command, reply)) = rx.recv() {
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(e) = spawned {
            // Without the thread every request fails with "supervisor thread is gone".
            eprintln!("envtest: cannot start the process supervisor thread: {e}");
        }
        Mutex::new(tx)
    })
}

#[cfg(target_os = "linux")]
fn set_parent_death_signal(command: &mut Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls async-signal-safe functions
    // (prctl, getppid); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The test binary died between fork and prctl: the signal will never come.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::other("the test binary exited during spawn"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_command: &mut Command, _signal: libc::c_int) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_the_handle_kills_the_process_by_pid() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let child = spawn("sleep", cmd).expect("spawn sleep");
        let pid = child.pid();
        assert!(child_of_this_binary(pid));
        drop(child);
        // Killed and reaped: no process of ours, not even a zombie, has that PID any more.
        assert!(!child_of_this_binary(pid));
    }

    fn child_of_this_binary(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|s| s.contains(&format!("PPid:\t{}\n", std::process::id())))
    }

    /// Not a check of its own: the body of the next test's child copy of this test binary,
    /// which starts a server-like child, reports its PID and dies without running destructors.
    #[test]
    fn helper_for_an_aborted_test_binary() {
        if std::env::var_os("ENVTEST_ABORT_HELPER").is_none() {
            return;
        }
        let mut cmd = Command::new("sleep");
        // Not holding the helper's stdout: the test must not wait for this child to end.
        cmd.arg("60")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let child = spawn("sleep", cmd).expect("spawn sleep");
        println!("PID={}", child.pid());
        std::process::abort();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_aborted_test_binary_leaks_no_children() {
        let exe = std::env::current_exe().expect("test binary");
        let out = Command::new(exe)
            .args([
                "--exact",
                "envtest::process::tests::helper_for_an_aborted_test_binary",
                "--nocapture",
            ])
            .env("ENVTEST_ABORT_HELPER", "1")
            .output()
            .expect("run the helper");
        assert!(!out.status.success(), "the helper aborts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let pid: u32 = stdout
            .lines()
            .find_map(|l| l.strip_prefix("PID="))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no PID line in {stdout}"));
        // The kernel delivers SIGKILL when the helper dies; the orphan is then reaped by init.
        let deadline = Instant::now() + Duration::from_secs(10);
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.starts_with("sleep\0"))
                .unwrap_or(false)
                && !std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .unwrap_or_default()
                    .contains("State:\tZ")
        };
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !alive(),
            "sleep (pid {pid}) outlived the aborted test binary"
        );
    }
}
