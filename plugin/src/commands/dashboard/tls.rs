//! HTTPS for a dashboard served beyond loopback: the certificate and key the user gives, read
//! once at start (a dashboard is a session, not a service: no reload).

use std::path::Path;
use std::sync::Arc;

use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

pub fn load(cert: &Path, key: &Path) -> Result<RustlsConfig> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| Error::file(cert.display(), format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(Error::file(cert.display(), "holds no certificate"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        Error::file(
            key.display(),
            format!("no usable private key (PKCS#8, PKCS#1 or SEC1): {e}"),
        )
    })?;
    // The process uses ring, as kube does (two providers would make rustls refuse to choose).
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, private))
        .map_err(|e| {
            Error::file(
                cert.display(),
                format!("does not pair with {}: {e}", key.display()),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(RustlsConfig::from_config(Arc::new(config)))
}
