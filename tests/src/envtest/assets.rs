//! Where the real server's binaries come from, and whether tests that need them run.
//!
//! The convention is Kubernetes' envtest one: `KUBEBUILDER_ASSETS` names a folder holding `etcd`
//! and `kube-apiserver` (what `setup-envtest use -p path` prints). Without it, on a developer's
//! machine, real-server tests are reported as ignored with one line saying how to enable them;
//! with `CI=true` they always run, so missing assets fail the run instead of passing quietly.

use std::path::{Path, PathBuf};

/// The environment variable naming the assets folder.
pub const ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";

/// The binaries a real-server test starts.
#[derive(Clone, Debug)]
pub struct Assets {
    pub dir: PathBuf,
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum AssetsError {
    #[error("{ASSETS_VAR} is not set; {HOW_TO_ENABLE}")]
    Unset,
    #[error("{ASSETS_VAR}={dir}: no {binary} there (the folder must hold etcd and kube-apiserver); {HOW_TO_ENABLE}")]
    Missing { dir: String, binary: &'static str },
}

/// What a user reads when real-server tests do not run.
pub const HOW_TO_ENABLE: &str =
    "point KUBEBUILDER_ASSETS at a folder holding etcd and kube-apiserver \
     (on the project's machines: KUBEBUILDER_ASSETS=$PWD/../shared/envtest/bin; elsewhere: \
     KUBEBUILDER_ASSETS=$(setup-envtest use -p path 1.32.x))";

impl Assets {
    /// The assets named by `KUBEBUILDER_ASSETS`. A relative value is taken from the workspace
    /// root, since `cargo test` runs each test binary in its package's folder.
    pub fn from_env() -> Result<Assets, AssetsError> {
        let value = std::env::var_os(ASSETS_VAR).filter(|v| !v.is_empty());
        let dir = PathBuf::from(value.ok_or(AssetsError::Unset)?);
        let dir = if dir.is_relative() {
            crate::bins::workspace_root().join(dir)
        } else {
            dir
        };
        Assets::in_dir(&dir)
    }

    pub fn in_dir(dir: &Path) -> Result<Assets, AssetsError> {
        let find = |binary: &'static str| {
            let path = dir.join(binary);
            if path.is_file() {
                Ok(path)
            } else {
                Err(AssetsError::Missing {
                    dir: dir.display().to_string(),
                    binary,
                })
            }
        };
        Ok(Assets {
            etcd: find("etcd")?,
            kube_apiserver: find("kube-apiserver")?,
            dir: dir.to_path_buf(),
        })
    }
}

/// Whether real-server tests run in this process.
#[derive(Clone, Debug)]
pub enum Gate {
    /// Run them (the assets may still be missing under `CI=true`: starting fails, loudly).
    Run,
    /// Report them as ignored; the reason says how to enable them.
    Skip(String),
}

/// `CI=true` (any value but empty, `0` or `false`, as CI systems set it) forces the tests to run.
pub fn gate() -> Gate {
    gate_for(ci(), Assets::from_env())
}

/// Whether this is a CI run (`CI` set to anything but empty, `0` or `false`): there, tests that
/// need something from the machine (a real API server, a browser) fail when it is missing
/// instead of being skipped.
pub fn ci() -> bool {
    std::env::var("CI")
        .map(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
        .unwrap_or(false)
}

fn gate_for(ci: bool, assets: Result<Assets, AssetsError>) -> Gate {
    match assets {
        Ok(_) => Gate::Run,
        Err(_) if ci => Gate::Run,
        Err(e) => Gate::Skip(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_both_binaries_is_named_with_the_missing_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("etcd"), "").expect("write");
        let err = Assets::in_dir(dir.path()).expect_err("no kube-apiserver");
        let text = err.to_string();
        assert!(text.contains("no kube-apiserver there"), "{text}");
        assert!(text.contains(HOW_TO_ENABLE), "{text}");
    }

    #[test]
    fn missing_assets_skip_on_a_workstation_and_run_in_ci() {
        assert!(
            matches!(gate_for(false, Err(AssetsError::Unset)), Gate::Skip(r) if r.contains("setup-envtest"))
        );
        assert!(matches!(gate_for(true, Err(AssetsError::Unset)), Gate::Run));
        let dir = tempfile::tempdir().expect("tempdir");
        for binary in ["etcd", "kube-apiserver"] {
            std::fs::write(dir.path().join(binary), "").expect("write");
        }
        let found = Assets::in_dir(dir.path());
        assert!(matches!(gate_for(false, found), Gate::Run));
    }
}
