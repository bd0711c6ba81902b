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
    #[error(
        "{path} exists: a new CA would replace it, and every caBundle that trusts the old CA \
         would stop verifying the webhook. Pass --ca-cert {ca_cert} --ca-key {path} to issue a \
         new serving certificate from that CA, or --force to make a new CA anyway",
        path = .path.display(),
        ca_cert = .ca_cert.display()
    )]
    WouldReplaceCaKey { path: PathBuf, ca_cert: PathBuf },
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
    let creates_ca = args.ca_cert.is_none();
    let ca_key = args.out.join("ca.key");
    // Checked before anything is created or written: a refusal leaves the directory as it was.
    if creates_ca && !args.force && fs::symlink_metadata(&ca_key).is_ok() {
        return Err(CertsError::WouldReplaceCaKey {
            ca_cert: args.out.join("ca.crt"),
            path: ca_key,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(out: &Path) -> CertsArgs {
        CertsArgs {
            dns: vec!["localhost".into()],
            ip: vec![],
            out: out.to_path_buf(),
            ca_cert: None,
            ca_key: None,
            force: false,
            valid_days: 1,
        }
    }

    fn contents(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
        let mut files: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn an_existing_ca_key_is_replaced_only_with_force() {
        let dir = tempfile::tempdir().unwrap();
        run(&args(dir.path())).unwrap();
        let before = contents(dir.path());
        assert_eq!(before.len(), 4);

        let err = run(&args(dir.path())).err().unwrap();
        let ca_key = dir.path().join("ca.key");
        assert!(matches!(&err, CertsError::WouldReplaceCaKey { path, .. } if *path == ca_key));
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("{} exists", ca_key.display()))
                && message.contains("--force")
                && message.contains(&format!("--ca-key {}", ca_key.display())),
            "{message}"
        );
        assert_eq!(contents(dir.path()), before, "nothing written when refused");

        // The way the message suggests: a new serving pair from the same CA.
        let mut reuse = args(dir.path());
        reuse.ca_cert = Some(dir.path().join("ca.crt"));
        reuse.ca_key = Some(ca_key.clone());
        run(&reuse).unwrap();
        let reused = contents(dir.path());
        assert_eq!(reused[..2], before[..2], "ca.crt and ca.key kept");
        assert_ne!(reused[3], before[3], "a new tls.key");

        let forced = CertsArgs {
            force: true,
            ..args(dir.path())
        };
        let written = run(&forced).unwrap();
        assert_eq!(written.ca_key.as_deref(), Some(ca_key.as_path()));
        assert_ne!(contents(dir.path())[1], before[1], "a new ca.key");
    }

    #[test]
    fn a_directory_without_a_ca_key_gets_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("ca.crt"), "left over").unwrap();
        let written = run(&args(dir.path())).unwrap();
        assert!(written.ca_key.is_some_and(|key| key.exists()));
    }
}
