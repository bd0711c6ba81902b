//! Finding the workspace's binaries and running them (and the real `kubectl`) against a
//! stand-in server with an isolated environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::apiserver::StandInHandle;

#[derive(Debug, thiserror::Error)]
pub enum BinError {
    #[error("cannot locate the target directory from the test executable {0}")]
    NoTargetDir(PathBuf),
    #[error("unknown workspace binary {0:?} (known: kubectl-promotion, promotion-webhook, standin-apiserver)")]
    Unknown(String),
    #[error("running `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Build {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{0} was built but is not at {1}")]
    Missing(String, PathBuf),
    #[error("setting up the plugin PATH in {dir}: {source}")]
    PluginPath {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// The workspace root (this crate lives in `<root>/tests`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `target/<profile>/` of the running test: the executable lives in `target/<profile>/deps/`
/// (integration tests) or `target/<profile>/` (binaries, examples).
pub fn target_dir() -> Result<PathBuf, BinError> {
    let exe = std::env::current_exe().map_err(|_| BinError::NoTargetDir(PathBuf::new()))?;
    let mut dir = exe
        .parent()
        .ok_or_else(|| BinError::NoTargetDir(exe.clone()))?
        .to_path_buf();
    if dir
        .file_name()
        .is_some_and(|n| n == "deps" || n == "examples")
    {
        dir.pop();
    }
    Ok(dir)
}

fn package_of(bin: &str) -> Option<&'static str> {
    match bin {
        "kubectl-promotion" => Some("kubectl-promotion"),
        "promotion-webhook" => Some("promotion-webhook"),
        "promotion-controller" => Some("promotion-controller"),
        "standin-apiserver" => Some("promotion-e2e"),
        _ => None,
    }
}

/// Path of a workspace binary, built with `cargo build -p <package> --bin <name>` first (once
/// per test process, so an edited plugin is never tested stale; a no-op when it is fresh).
pub fn binary(name: &str) -> Result<PathBuf, BinError> {
    static BUILT: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let package = package_of(name).ok_or_else(|| BinError::Unknown(name.to_string()))?;
    let dir = target_dir()?;
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|p| p.into_inner());
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
        let mut cmd = Command::new(&cargo);
        let mut args = vec!["build", "--quiet", "-p", package, "--bin", name];
        // The controller's crash injection (inert unless a test names a point): the tests'
        // build has it, release and container builds never do.
        if package == "promotion-controller" {
            args.extend(["--features", "fault-injection"]);
        }
        if dir.file_name().is_some_and(|n| n == "release") {
            args.push("--release");
        }
        cmd.args(&args);
        let command = format!("cargo {}", args.join(" "));
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|source| BinError::Spawn {
                command: command.clone(),
                source,
            })?;
        if !out.status.success() {
            return Err(BinError::Build {
                command,
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        built.push(name.to_string());
    }
    if !path.exists() {
        return Err(BinError::Missing(name.to_string(), path));
    }
    Ok(path)
}

/// What a finished command left behind.
#[derive(Clone, Debug)]
pub struct Output {
    /// Exit code; -1 when killed by a signal.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// This output, after asserting that the exit code is `code` (the panic shows both streams).
    #[track_caller]
    pub fn expect(self, code: i32) -> Output {
        assert_eq!(self.code, code, "wanted exit {code}, got {self}");
        self
    }
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Self {
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Run a prepared command to completion, capturing output.
pub fn run(cmd: &mut Command) -> Result<Output, BinError> {
    let command = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .output()
        .map(Output::from)
        .map_err(|source| BinError::Spawn { command, source })
}

/// A kubeconfig with one cluster, one token user and one context, all named `name`: for
/// kubeconfigs the stand-in does not write itself (another server address, no CA, several files
/// to merge).
#[derive(Clone, Debug)]
pub struct Kubeconfig<'a> {
    pub name: &'a str,
    pub server: &'a str,
    pub token: &'a str,
    /// `certificate-authority-data`; `None` leaves the server unverifiable.
    pub ca_pem: Option<&'a str>,
}

impl<'a> Kubeconfig<'a> {
    /// Cluster, user and context all named `name`; no CA.
    pub fn new(name: &'a str, server: &'a str, token: &'a str) -> Self {
        Kubeconfig {
            name,
            server,
            token,
            ca_pem: None,
        }
    }

    pub fn with_ca(mut self, ca_pem: &'a str) -> Self {
        self.ca_pem = Some(ca_pem);
        self
    }

    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        use base64::Engine;
        let name = self.name;
        let ca = self
            .ca_pem
            .map(|pem| {
                let data = base64::engine::general_purpose::STANDARD.encode(pem);
                format!("    certificate-authority-data: {data}\n")
            })
            .unwrap_or_default();
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\n{ca}users:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\ncurrent-context: {name}\n",
            server = self.server,
            token = self.token,
        );
        std::fs::write(path, text)
    }
}

/// An isolated client environment for one stand-in: a temp dir holding the kubeconfig, kubectl's
/// discovery cache and `HOME`, and a PATH directory where `kubectl-promotion` is linked so the
/// real `kubectl` finds the plugin. Commands get no other environment variables, so nothing from
/// the developer's shell (`NO_COLOR`, `KUBECTL_EXTERNAL_DIFF`, another `KUBECONFIG`) leaks in.
pub struct KubeEnv {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    plugin_dir: PathBuf,
}

impl KubeEnv {
    pub fn new(server: &StandInHandle) -> Result<Self, BinError> {
        let dir = tempfile::tempdir().map_err(|source| BinError::PluginPath {
            dir: std::env::temp_dir(),
            source,
        })?;
        let kubeconfig =
            server
                .write_kubeconfig(dir.path())
                .map_err(|source| BinError::PluginPath {
                    dir: dir.path().to_path_buf(),
                    source,
                })?;
        let plugin_dir = dir.path().join("bin");
        std::fs::create_dir_all(&plugin_dir).map_err(|source| BinError::PluginPath {
            dir: plugin_dir.clone(),
            source,
        })?;
        Ok(KubeEnv {
            dir,
            kubeconfig,
            plugin_dir,
        })
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The directory first on PATH, where plugins (and kubectl's completion helpers) go.
    pub fn bin_dir(&self) -> &Path {
        &self.plugin_dir
    }

    /// Write another kubeconfig (e.g. for a second user) next to the default one.
    pub fn kubeconfig_for(
        &self,
        server: &StandInHandle,
        token: &str,
        user: &str,
    ) -> Result<PathBuf, BinError> {
        let path = self.dir.path().join(format!("kubeconfig-{user}"));
        server
            .write_kubeconfig_for(&path, token, user)
            .map_err(|source| BinError::PluginPath {
                dir: self.dir.path().to_path_buf(),
                source,
            })?;
        Ok(path)
    }

    /// Link `kubectl-promotion` into the PATH directory (builds it if needed).
    pub fn install_plugin(&self) -> Result<PathBuf, BinError> {
        let plugin = binary("kubectl-promotion")?;
        let link = self.plugin_dir.join("kubectl-promotion");
        if !link.exists() {
            link_or_copy(&plugin, &link).map_err(|source| BinError::PluginPath {
                dir: self.plugin_dir.clone(),
                source,
            })?;
        }
        Ok(link)
    }

    /// PATH with the plugin directory first.
    pub fn path_env(&self) -> OsString {
        let mut paths = vec![self.plugin_dir.clone()];
        if let Some(existing) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&existing));
        }
        std::env::join_paths(paths).unwrap_or_default()
    }

    /// A command with only `KUBECONFIG`, `KUBECACHEDIR`, `HOME` and `PATH` set, for this
    /// environment.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env("HOME", self.dir.path())
            .env("PATH", self.path_env());
        cmd
    }

    /// Run the real `kubectl` with `args`.
    pub fn kubectl(&self, args: &[&str]) -> Result<Output, BinError> {
        let mut cmd = self.command("kubectl");
        cmd.args(args);
        run(&mut cmd)
    }

    /// Run `kubectl-promotion` directly with `args`.
    pub fn plugin(&self, args: &[&str]) -> Result<Output, BinError> {
        let mut cmd = self.command(binary("kubectl-promotion")?);
        cmd.args(args);
        run(&mut cmd)
    }
}

#[cfg(unix)]
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to).map(|_| ())
}

/// Send each line of `pipe`, tagged with `tag` (which stream it came from), until the pipe
/// closes or the receiver is gone: how a test follows a running process's output as it is
/// written, to wait for a line instead of for time.
pub fn forward_lines<T: Copy + Send + 'static>(
    tag: T,
    pipe: impl std::io::Read + Send + 'static,
    tx: std::sync::mpsc::Sender<(T, String)>,
) -> std::thread::JoinHandle<()> {
    use std::io::BufRead;
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx
                        .send((tag, String::from_utf8_lossy(&line).into_owned()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    })
}
