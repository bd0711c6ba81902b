//! `certs`: a CA and a serving certificate for development, tests and the static-certificate
//! install. Production installs usually let cert-manager issue the pair instead.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{Duration as ChronoDuration, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::cli::CertsArgs;

#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    #[error("give at least one --dns or --ip for the serving certificate")]
    NoNames,
    #[error("invalid DNS name {name:?}: {reason}")]
    DnsName { name: String, reason: String },
    #[error("cannot read {path}: {reason}", path = .path.display())]
    Read { path: PathBuf, reason: String },
    #[error("cannot write {path}: {reason}", path = .path.display())]
    Write { path: PathBuf, reason: String },
    #[error("cannot create the certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// The files written, for the caller to report.
pub struct Written {
    pub ca_cert: PathBuf,
    pub ca_key: Option<PathBuf>,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Clients and servers disagree on the time by a little; Gatekeeper's cert-controller backdates
/// by an hour for the same reason.
const BACKDATE: ChronoDuration = ChronoDuration::hours(1);

pub fn run(args: &CertsArgs) -> Result<Written, CertsError> {
    if args.dns.is_empty() && args.ip.is_empty() {
        return Err(CertsError::NoNames);
    }
    fs::create_dir_all(&args.out).map_err(|e| CertsError::Write {
        path: args.out.clone(),
        reason: e.to_string(),
    })?;
    let now = Utc::now();
    let leaf_days = i64::from(args.valid_days);

    let (issuer, ca_pem, ca_key_pem) = match (&args.ca_cert, &args.ca_key) {
        (Some(cert), Some(key)) => {
            let cert_pem = read(cert)?;
            let key = KeyPair::from_pem(&read(key)?)?;
            let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)?;
            (issuer, cert_pem, None)
        }
        _ => {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::default();
            params.distinguished_name = name("promotion-webhook development CA");
            params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
            params.key_usages = vec![
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
                KeyUsagePurpose::DigitalSignature,
            ];
            params.not_before = to_offset(now - BACKDATE);
            params.not_after = to_offset(now + ChronoDuration::days(leaf_days * 10));
            let cert = params.self_signed(&key)?;
            let key_pem = key.serialize_pem();
            (Issuer::new(params, key), cert.pem(), Some(key_pem))
        }
    };

    let mut names = Vec::new();
    for dns in &args.dns {
        let ia5 = dns
            .clone()
            .try_into()
            .map_err(|e: rcgen::Error| CertsError::DnsName {
                name: dns.clone(),
                reason: e.to_string(),
            })?;
        names.push(SanType::DnsName(ia5));
    }
    names.extend(args.ip.iter().map(|ip| SanType::IpAddress(*ip)));

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let common_name = args
        .dns
        .first()
        .cloned()
        .or_else(|| args.ip.first().map(ToString::to_string))
        .unwrap_or_default();
    params.distinguished_name = name(&common_name);
    params.subject_alt_names = names;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = to_offset(now - BACKDATE);
    params.not_after = to_offset(now + ChronoDuration::days(leaf_days));
    let cert = params.signed_by(&key, &issuer)?;

    let out = &args.out;
    let written = Written {
        ca_cert: out.join("ca.crt"),
        ca_key: ca_key_pem.as_ref().map(|_| out.join("ca.key")),
        cert: out.join("tls.crt"),
        key: out.join("tls.key"),
    };
    write(&written.ca_cert, ca_pem.as_bytes(), false)?;
    if let (Some(path), Some(pem)) = (&written.ca_key, &ca_key_pem) {
        write(path, pem.as_bytes(), true)?;
    }
    write(&written.cert, cert.pem().as_bytes(), false)?;
    write(&written.key, key.serialize_pem().as_bytes(), true)?;
    Ok(written)
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

fn to_offset(time: chrono::DateTime<Utc>) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(time.timestamp())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

fn read(path: &Path) -> Result<String, CertsError> {
    fs::read_to_string(path).map_err(|e| CertsError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Private keys are created owner-only; the file is written next to the target and renamed, so
/// a server polling the directory never reads half a file.
fn write(path: &Path, contents: &[u8], private: bool) -> Result<(), CertsError> {
    let error = |e: std::io::Error| CertsError::Write {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    let mut file = options.open(&tmp).map_err(error)?;
    file.write_all(contents).map_err(error)?;
    file.sync_all().map_err(error)?;
    fs::rename(&tmp, path).map_err(error)
}
