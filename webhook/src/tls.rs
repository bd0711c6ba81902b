//! Serving certificate: load the PEM pair, build the rustls configuration (TLS 1.2 and 1.3,
//! ALPN h2 and http/1.1, ring provider), and reload it when the files change on disk.
//!
//! Reload is by polling, as cert-manager's own webhook does: every interval the files are read
//! (following symlinks, so the `..data` symlink swap of a Kubernetes Secret volume is seen like
//! any rewrite) and fingerprinted by modification times and content hash. A changed pair is
//! parsed and its key checked against the certificate before it replaces the one in use; on any
//! error the old pair keeps serving and the next change is tried again. New handshakes use the
//! new pair; established connections keep theirs, so no request in flight fails.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

use crate::config::TlsFiles;
use crate::metrics::Metrics;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}", path = .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{path}: no PEM certificate found", path = .path.display())]
    NoCertificate { path: PathBuf },
    #[error("{path}: invalid PEM: {reason}", path = .path.display())]
    Pem { path: PathBuf, reason: String },
    #[error("{path}: {reason}", path = .path.display())]
    Certificate { path: PathBuf, reason: String },
    #[error("{cert} and {key} cannot be used together: {reason}", cert = .cert.display(), key = .key.display())]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
}

/// What identifies one version of the pair on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    cert_modified: Option<SystemTime>,
    key_modified: Option<SystemTime>,
    content_hash: u64,
}

/// A parsed, checked pair ready to serve.
pub struct LoadedPair {
    pub config: Arc<ServerConfig>,
    pub fingerprint: Fingerprint,
    /// Expiry of the serving certificate (Unix seconds).
    pub not_after: i64,
}

struct Files {
    cert: Vec<u8>,
    key: Vec<u8>,
    fingerprint: Fingerprint,
}

fn read(path: &Path) -> Result<(Vec<u8>, Option<SystemTime>), TlsError> {
    let error = |source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Both calls follow symlinks, so a swapped `..data` link yields the new file's time.
    let modified = std::fs::metadata(path).map_err(error)?.modified().ok();
    let bytes = std::fs::read(path).map_err(error)?;
    Ok((bytes, modified))
}

fn read_files(files: &TlsFiles) -> Result<Files, TlsError> {
    let (cert, cert_modified) = read(&files.cert)?;
    let (key, key_modified) = read(&files.key)?;
    let mut hasher = DefaultHasher::new();
    cert.hash(&mut hasher);
    key.hash(&mut hasher);
    Ok(Files {
        cert,
        key,
        fingerprint: Fingerprint {
            cert_modified,
            key_modified,
            content_hash: hasher.finish(),
        },
    })
}

/// Read, parse and check the pair.
pub fn load(files: &TlsFiles) -> Result<LoadedPair, TlsError> {
    let read = read_files(files)?;
    let (config, not_after) = server_config(&read.cert, &read.key, files)?;
    Ok(LoadedPair {
        config: Arc::new(config),
        fingerprint: read.fingerprint,
        not_after,
    })
}

fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    files: &TlsFiles,
) -> Result<(ServerConfig, i64), TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: files.cert.clone(),
            reason: e.to_string(),
        })?;
    let leaf = chain.first().ok_or_else(|| TlsError::NoCertificate {
        path: files.cert.clone(),
    })?;
    let not_after = match x509_parser::parse_x509_certificate(leaf) {
        Ok((_, parsed)) => parsed.validity().not_after.timestamp(),
        Err(e) => {
            return Err(TlsError::Certificate {
                path: files.cert.clone(),
                reason: format!("not an X.509 certificate: {e}"),
            })
        }
    };
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        path: files.key.clone(),
        reason: format!("no usable private key (PKCS#8, PKCS#1 or SEC1): {e}"),
    })?;
    let pair_error = |e: rustls::Error| TlsError::Pair {
        cert: files.cert.clone(),
        key: files.key.clone(),
        reason: e.to_string(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // with_single_cert checks that the key belongs to the leaf certificate.
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(pair_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(pair_error)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((config, not_after))
}

/// Watches the pair and swaps it into `rustls` when it changes.
pub struct Reloader {
    rustls: RustlsConfig,
    files: TlsFiles,
    metrics: Arc<Metrics>,
    /// The pair in use.
    current: Fingerprint,
    /// The last version that failed to load, so that a broken pair is reported once, not every
    /// interval.
    failed: Option<Fingerprint>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    Unchanged,
    Reloaded,
    Failed,
}

impl Reloader {
    pub fn new(
        rustls: RustlsConfig,
        files: TlsFiles,
        metrics: Arc<Metrics>,
        loaded: &LoadedPair,
    ) -> Self {
        metrics.set_cert_not_after(loaded.not_after);
        Reloader {
            rustls,
            files,
            metrics,
            current: loaded.fingerprint.clone(),
            failed: None,
        }
    }

    pub fn poll(&mut self) -> ReloadOutcome {
        let read = match read_files(&self.files) {
            Ok(read) => read,
            Err(e) => {
                // Mid-swap a file can be missing for an instant; report it once per episode.
                if self.failed.is_none() {
                    tracing::warn!(error = %e, "serving certificate unreadable; keeping the one in use");
                    self.metrics.record_reload(false);
                    self.failed = Some(self.current.clone());
                }
                return ReloadOutcome::Failed;
            }
        };
        if read.fingerprint == self.current {
            self.failed = None;
            return ReloadOutcome::Unchanged;
        }
        if self.failed.as_ref() == Some(&read.fingerprint) {
            return ReloadOutcome::Failed;
        }
        match server_config(&read.cert, &read.key, &self.files) {
            Ok((config, not_after)) => {
                self.rustls.reload_from_config(Arc::new(config));
                self.metrics.record_reload(true);
                self.metrics.set_cert_not_after(not_after);
                self.current = read.fingerprint;
                self.failed = None;
                tracing::info!(
                    cert = %self.files.cert.display(),
                    not_after,
                    "serving certificate reloaded"
                );
                ReloadOutcome::Reloaded
            }
            Err(e) => {
                tracing::error!(error = %e, "new serving certificate rejected; keeping the one in use");
                self.metrics.record_reload(false);
                self.failed = Some(read.fingerprint);
                ReloadOutcome::Failed
            }
        }
    }

    /// Poll on a dedicated thread until `stop` is set.
    pub fn spawn(mut self, stop: Arc<AtomicBool>) -> io::Result<std::thread::JoinHandle<()>> {
        let interval = self.files.reload_interval;
        poll_every("cert-reload", interval, stop, move || {
            self.poll();
        })
    }
}

/// Call `poll` every `interval` on a thread of its own (the reloaders' file reads are blocking
/// and rare) until `stop` is set.
pub fn poll_every(
    name: &str,
    interval: std::time::Duration,
    stop: Arc<AtomicBool>,
    mut poll: impl FnMut() + Send + 'static,
) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(interval);
                poll();
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CertsArgs;
    use std::time::Duration;

    fn pair(dir: &Path) -> TlsFiles {
        crate::certs::run(&CertsArgs {
            dns: vec!["localhost".into()],
            ip: vec![],
            out: dir.to_path_buf(),
            ca_cert: None,
            ca_key: None,
            force: false,
            valid_days: 30,
        })
        .expect("certs");
        TlsFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            reload_interval: Duration::from_secs(1),
        }
    }

    #[test]
    fn errors_name_the_file_and_the_reason() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let files = pair(a.path());
        let other = pair(b.path());
        let loaded = load(&files).expect("a good pair loads");
        assert_eq!(
            loaded.config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(loaded.not_after > chrono::Utc::now().timestamp());

        let missing = TlsFiles {
            cert: a.path().join("nope.crt"),
            ..files.clone()
        };
        let err = load(&missing).err().unwrap().to_string();
        assert!(err.contains("nope.crt"), "{err}");

        let mismatched = TlsFiles {
            key: other.key.clone(),
            ..files.clone()
        };
        let err = load(&mismatched).err().unwrap().to_string();
        assert!(err.contains("cannot be used together"), "{err}");

        std::fs::write(a.path().join("empty.crt"), "no pem here").unwrap();
        let empty = TlsFiles {
            cert: a.path().join("empty.crt"),
            ..files.clone()
        };
        let err = load(&empty).err().unwrap().to_string();
        assert!(
            err.contains("empty.crt") && err.contains("no PEM certificate"),
            "{err}"
        );

        std::fs::write(
            a.path().join("bad.key"),
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let bad_key = TlsFiles {
            key: a.path().join("bad.key"),
            ..files
        };
        let err = load(&bad_key).err().unwrap().to_string();
        assert!(err.contains("bad.key"), "{err}");
    }

    #[test]
    fn reloader_swaps_only_good_changes() {
        let dir = tempfile::tempdir().unwrap();
        let files = pair(dir.path());
        let loaded = load(&files).unwrap();
        let metrics = Arc::new(Metrics::new());
        let rustls = RustlsConfig::from_config(loaded.config.clone());
        let mut reloader = Reloader::new(rustls.clone(), files.clone(), metrics.clone(), &loaded);
        assert_eq!(reloader.poll(), ReloadOutcome::Unchanged);

        let original_key = std::fs::read(&files.key).unwrap();
        std::fs::write(&files.key, b"garbage").unwrap();
        assert_eq!(reloader.poll(), ReloadOutcome::Failed);
        // Reported once, not on every poll.
        assert_eq!(reloader.poll(), ReloadOutcome::Failed);
        assert!(Arc::ptr_eq(&rustls.get_inner(), &loaded.config));

        std::fs::write(&files.key, original_key).unwrap();
        let other = tempfile::tempdir().unwrap();
        let fresh = pair(other.path());
        std::fs::copy(&fresh.cert, &files.cert).unwrap();
        std::fs::copy(&fresh.key, &files.key).unwrap();
        assert_eq!(reloader.poll(), ReloadOutcome::Reloaded);
        assert!(!Arc::ptr_eq(&rustls.get_inner(), &loaded.config));
        assert_eq!(reloader.poll(), ReloadOutcome::Unchanged);
        let text = metrics.render();
        assert!(
            text.contains("promotion_webhook_certificate_reloads_total{result=\"success\"} 1\n")
        );
        assert!(
            text.contains("promotion_webhook_certificate_reloads_total{result=\"failure\"} 1\n")
        );
    }
}
