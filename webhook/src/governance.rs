//! The approver rules from `--governance-dir`: the published ConfigMap
//! (`kubectl-promotion-system/promotion-governance`) mounted as a folder, one file per key. Read
//! at start (a folder that does not hold valid rules stops the start), then re-read every
//! `--cert-reload-interval`, so an edit of the ConfigMap takes effect once the kubelet has
//! updated the volume, without a restart — and the plugin, reading the same ConfigMap, says
//! what is enforced.
//!
//! A change that does not parse keeps the rules in use (reported once per version): approvals
//! are never opened to everyone because of a typo.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use promotion_shared::admission::{PublishedError, PublishedGovernance};

use crate::evaluation::Evaluator;

#[derive(Debug, thiserror::Error)]
pub enum GovernanceDirError {
    #[error("approver rules in {dir}: cannot read {what}: {source}")]
    Read {
        dir: PathBuf,
        what: String,
        source: io::Error,
    },
    #[error("approver rules in {dir}: {source}")]
    Invalid {
        dir: PathBuf,
        source: PublishedError,
    },
}

/// The rules in `dir`: each regular file is a key. The kubelet's own entries of a mounted
/// volume (`..data`, `..2026_…`) are skipped; keys are the symlinks beside them.
pub fn read_dir(dir: &Path) -> Result<PublishedGovernance, GovernanceDirError> {
    let read = |what: &Path, source| GovernanceDirError::Read {
        dir: dir.to_path_buf(),
        what: what.display().to_string(),
        source,
    };
    let mut entries: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| read(dir, e))? {
        let entry = entry.map_err(|e| read(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("..") {
            continue;
        }
        let path = entry.path();
        let text = std::fs::read_to_string(&path).map_err(|e| read(&path, e))?;
        entries.push((name, text));
    }
    entries.sort();
    PublishedGovernance::parse(entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(
        |source| GovernanceDirError::Invalid {
            dir: dir.to_path_buf(),
            source,
        },
    )
}

/// Re-reads the folder and gives the evaluator the rules when they change.
pub struct GovernanceReloader {
    dir: PathBuf,
    controller_users: Vec<String>,
    evaluator: Evaluator,
    current: PublishedGovernance,
    /// The last error reported, so that a broken version is reported once, not every interval.
    failed: Option<String>,
}

impl GovernanceReloader {
    pub fn new(
        dir: PathBuf,
        controller_users: Vec<String>,
        evaluator: Evaluator,
        current: PublishedGovernance,
    ) -> Self {
        GovernanceReloader {
            dir,
            controller_users,
            evaluator,
            current,
            failed: None,
        }
    }

    /// Whether the rules in use changed.
    pub fn poll(&mut self) -> bool {
        match read_dir(&self.dir) {
            Ok(rules) if rules == self.current => {
                self.failed = None;
                false
            }
            Ok(rules) => {
                self.evaluator
                    .set_policy(rules.policy(self.controller_users.clone()));
                tracing::info!(
                    approver_groups = ?rules.approver_groups,
                    forbid_self_approval = rules.forbid_self_approval,
                    dir = %self.dir.display(),
                    "approver rules reloaded"
                );
                self.current = rules;
                self.failed = None;
                true
            }
            Err(e) => {
                let text = e.to_string();
                if self.failed.as_ref() != Some(&text) {
                    tracing::error!(error = %text, "approver rules not reloaded; keeping the ones in use");
                    self.failed = Some(text);
                }
                false
            }
        }
    }

    /// Poll on a dedicated thread until `stop` is set.
    pub fn spawn(
        mut self,
        interval: Duration,
        stop: Arc<AtomicBool>,
    ) -> io::Result<std::thread::JoinHandle<()>> {
        crate::tls::poll_every("governance-reload", interval, stop, move || {
            self.poll();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mounted_configmap_is_read_and_a_broken_edit_keeps_the_rules_in_use() {
        let dir = tempfile::tempdir().unwrap();
        // What the kubelet writes: the data folder, its link, and one link per key.
        let data = dir.path().join("..2026_11_27_15_00_00.1");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("approver-groups"), "release-managers").unwrap();
        std::os::unix::fs::symlink(&data, dir.path().join("..data")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("..data/approver-groups"),
            dir.path().join("approver-groups"),
        )
        .unwrap();
        let rules = read_dir(dir.path()).unwrap();
        assert_eq!(rules.approver_groups, ["release-managers"]);
        assert!(!rules.forbid_self_approval);

        let evaluator = Evaluator::default();
        let mut reloader =
            GovernanceReloader::new(dir.path().into(), vec![], evaluator.clone(), rules);
        assert!(!reloader.poll(), "nothing changed");
        std::fs::write(dir.path().join("forbid-self-approval"), "maybe").unwrap();
        assert!(!reloader.poll(), "a broken edit is not applied");
        assert!(evaluator.policy().approver_groups.is_empty());
        std::fs::write(dir.path().join("forbid-self-approval"), "true").unwrap();
        assert!(reloader.poll());
        let policy = evaluator.policy();
        assert_eq!(policy.approver_groups, ["release-managers"]);
        assert!(policy.forbid_self_approval);
    }

    #[test]
    fn a_folder_that_is_not_there_is_named() {
        let err = read_dir(Path::new("/nonexistent/governance")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("approver rules in /nonexistent/governance: cannot read"),
            "{err}"
        );
    }
}
