//! Certificates from the binary's own `certs` subcommand.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::TestingError;

/// What `certs` wrote into a directory.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub ca_cert: PathBuf,
    /// Absent when the pair was signed by a CA given with `--ca-cert`/`--ca-key`.
    pub ca_key: Option<PathBuf>,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CertFiles {
    /// The CA certificate, which verifies the serving pair.
    pub fn ca_pem(&self) -> Result<String, TestingError> {
        std::fs::read_to_string(&self.ca_cert).map_err(|source| TestingError::Read {
            path: self.ca_cert.clone(),
            source,
        })
    }
}

/// Run `bin certs --dns localhost --ip 127.0.0.1 --out dir`, with `extra` arguments appended
/// (e.g. `--ca-cert`, `--force`).
pub fn generate_certs(bin: &Path, dir: &Path, extra: &[&str]) -> Result<CertFiles, TestingError> {
    let mut command = Command::new(bin);
    command
        .args(["certs", "--dns", "localhost", "--ip", "127.0.0.1", "--out"])
        .arg(dir)
        .args(extra);
    let described = format!("{command:?}");
    let out = command.output().map_err(|source| TestingError::Spawn {
        command: described.clone(),
        source,
    })?;
    if !out.status.success() {
        return Err(TestingError::Failed {
            command: described,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let ca_key = dir.join("ca.key");
    let signed_elsewhere = extra.contains(&"--ca-cert");
    Ok(CertFiles {
        ca_cert: dir.join("ca.crt"),
        ca_key: (!signed_elsewhere).then_some(ca_key),
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    })
}
