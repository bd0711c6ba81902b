//! Certificates for the stand-in (and for test webhooks): a throwaway CA and leaf certificates
//! with IP and DNS SANs, plus rustls configurations that use only the ring provider.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("generating a certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("building the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("reading PEM ({what}): {detail}")]
    Pem { what: &'static str, detail: String },
}

/// A throwaway certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

/// A leaf certificate and its private key, PEM encoded.
#[derive(Clone, Debug)]
pub struct IssuedCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new(common_name: &str) -> Result<Self, TlsError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(TestCa {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A serving certificate for `sans` (IP addresses and DNS names both accepted).
    pub fn issue(&self, sans: &[&str]) -> Result<IssuedCert, TlsError> {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        params.distinguished_name.push(
            DnType::CommonName,
            sans.first().copied().unwrap_or("localhost"),
        );
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

pub fn ring_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Server configuration offering h2 and http/1.1 like the real API server.
pub fn server_config(cert: &IssuedCert) -> Result<rustls::ServerConfig, TlsError> {
    let certs = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what: "serving certificate",
            detail: e.to_string(),
        })?;
    let key =
        PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).map_err(|e| TlsError::Pem {
            what: "serving key",
            detail: e.to_string(),
        })?;
    let mut config = rustls::ServerConfig::builder_with_provider(ring_provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Client configuration trusting only `ca_pem` (used to call admission webhooks).
pub fn client_config(ca_pem: &str) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|e| TlsError::Pem {
            what: "CA bundle",
            detail: e.to_string(),
        })?;
        roots.add(cert)?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(ring_provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
