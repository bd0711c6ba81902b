//! Certificates: the `certs` subcommand, TLS versions and ALPN, and rotation while clients keep
//! sending, through a Kubernetes-style `..data` symlink swap.

mod support;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use support::{
    connect, example, generate_certs, metric, review, tls_config, Options, Server, ALICE,
};

fn leaf_der(path: &Path) -> Vec<u8> {
    let pem = std::fs::read(path).unwrap();
    CertificateDer::pem_slice_iter(&pem)
        .next()
        .expect("a certificate")
        .unwrap()
        .to_vec()
}

#[test]
fn certs_writes_a_ca_and_a_serving_pair() {
    let dir = tempfile::tempdir().unwrap();
    generate_certs(dir.path(), &[]);
    for (file, mode) in [
        ("ca.crt", 0o644),
        ("ca.key", 0o600),
        ("tls.crt", 0o644),
        ("tls.key", 0o600),
    ] {
        let meta = std::fs::metadata(dir.path().join(file)).expect(file);
        assert_eq!(meta.permissions().mode() & 0o777, mode, "{file}");
    }
    let der = leaf_der(&dir.path().join("tls.crt"));
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(
        cert.validity().not_before.timestamp() <= now - 30 * 60,
        "notBefore is backdated for clock skew"
    );
    let sans = cert.subject_alternative_name().unwrap().unwrap();
    use x509_parser::extensions::GeneralName;
    let names = &sans.value.general_names;
    assert!(
        names.contains(&GeneralName::DNSName("localhost")),
        "{names:?}"
    );
    assert!(
        names.contains(&GeneralName::IPAddress(&[127, 0, 0, 1])),
        "{names:?}"
    );
    assert!(!cert.is_ca());

    // Reusing the CA: a new serving pair, same CA, no CA key written.
    let second = tempfile::tempdir().unwrap();
    let ca_cert = dir.path().join("ca.crt");
    let ca_key = dir.path().join("ca.key");
    generate_certs(
        second.path(),
        &[
            "--ca-cert",
            ca_cert.to_str().unwrap(),
            "--ca-key",
            ca_key.to_str().unwrap(),
        ],
    );
    assert!(!second.path().join("ca.key").exists());
    assert_eq!(
        std::fs::read(second.path().join("ca.crt")).unwrap(),
        std::fs::read(&ca_cert).unwrap()
    );
    let der2 = leaf_der(&second.path().join("tls.crt"));
    let (_, cert2) = x509_parser::parse_x509_certificate(&der2).unwrap();
    assert_eq!(cert2.issuer(), cert.issuer());
    assert_ne!(der2, der);
}

#[test]
fn certs_refuses_incomplete_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(support::BIN)
        .args(["certs", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dns or --ip"));
    let out = std::process::Command::new(support::BIN)
        .args(["certs", "--dns", "a", "--ca-cert", "x", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ca-key"));
}

#[test]
fn certs_rerun_keeps_the_ca_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    generate_certs(dir.path(), &[]);
    let snapshot = || {
        ["ca.crt", "ca.key", "tls.crt", "tls.key"]
            .map(|file| std::fs::read(dir.path().join(file)).unwrap())
    };
    let before = snapshot();
    let rerun = |extra: &[&str]| {
        std::process::Command::new(support::BIN)
            .args(["certs", "--dns", "localhost", "--out"])
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap()
    };

    let out = rerun(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ca_key = dir.path().join("ca.key");
    assert!(
        stderr.starts_with(&format!("promotion-webhook: {} exists", ca_key.display()))
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing reported as written");
    assert_eq!(snapshot(), before, "nothing written");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);

    let out = rerun(&["--force"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = snapshot();
    assert_ne!(after[0], before[0], "a new CA certificate");
    assert_ne!(after[1], before[1], "a new CA key");
}

#[tokio::test]
async fn serves_tls_1_2_and_1_3_verified_by_name_and_address() {
    let server = Server::start();
    for (version, expected) in [
        (&rustls::version::TLS12, rustls::ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, rustls::ProtocolVersion::TLSv1_3),
    ] {
        let config = tls_config(server.ca(), &[b"http/1.1"], Some(version));
        for name in ["localhost", "127.0.0.1"] {
            let (mut conn, info) = connect(server.https, config.clone(), name).await.unwrap();
            assert_eq!(info.version, Some(expected));
            let body = serde_json::to_vec(&review(
                "t",
                "CREATE",
                Some(&example("kyverno-manual-gate.yaml")),
                None,
                &ALICE,
            ))
            .unwrap();
            assert_eq!(conn.post("/validate", body).await.unwrap().status, 200);
        }
    }
    // A name the certificate does not cover, or a CA that did not sign it, is refused.
    let config = tls_config(server.ca(), &[b"http/1.1"], None);
    let err = connect(server.https, config, "example.com")
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("certificate"), "{err}");
    let other = tempfile::tempdir().unwrap();
    generate_certs(other.path(), &[]);
    let stranger = tls_config(
        &std::fs::read(other.path().join("ca.crt")).unwrap(),
        &[],
        None,
    );
    assert!(connect(server.https, stranger, "localhost").await.is_err());
}

/// The layout kubelet gives a Secret volume: `tls.crt -> ..data/tls.crt`,
/// `..data -> ..<timestamp>/`, swapped atomically by renaming a new `..data_tmp` link.
struct SecretVolume {
    root: PathBuf,
    generation: usize,
}

impl SecretVolume {
    fn new(root: &Path, cert: &Path, key: &Path) -> Self {
        let mut volume = SecretVolume {
            root: root.to_path_buf(),
            generation: 0,
        };
        volume.swap(cert, key);
        symlink("..data/tls.crt", root.join("tls.crt")).unwrap();
        symlink("..data/tls.key", root.join("tls.key")).unwrap();
        volume
    }

    fn swap(&mut self, cert: &Path, key: &Path) {
        self.generation += 1;
        let previous = self.generation - 1;
        let dir = format!("..2026_03_01_12_00_0{}", self.generation);
        std::fs::create_dir(self.root.join(&dir)).unwrap();
        std::fs::copy(cert, self.root.join(&dir).join("tls.crt")).unwrap();
        std::fs::copy(key, self.root.join(&dir).join("tls.key")).unwrap();
        symlink(&dir, self.root.join("..data_tmp")).unwrap();
        std::fs::rename(self.root.join("..data_tmp"), self.root.join("..data")).unwrap();
        if previous > 0 {
            // kubelet removes the old generation right after the swap.
            std::fs::remove_dir_all(self.root.join(format!("..2026_03_01_12_00_0{previous}")))
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rotation_under_load_fails_no_request() {
    let certs = tempfile::tempdir().unwrap();
    let (first, second, broken) = (
        certs.path().join("1"),
        certs.path().join("2"),
        certs.path().join("3"),
    );
    generate_certs(&first, &[]);
    let ca_args = |dir: &Path| -> Vec<String> {
        vec![
            "--ca-cert".into(),
            dir.join("ca.crt").display().to_string(),
            "--ca-key".into(),
            dir.join("ca.key").display().to_string(),
        ]
    };
    let args = ca_args(&first);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    generate_certs(&second, &args);
    generate_certs(&broken, &args);

    let dir = tempfile::tempdir().unwrap();
    let volume_root = dir.path().join("volume");
    std::fs::create_dir(&volume_root).unwrap();
    let mut volume =
        SecretVolume::new(&volume_root, &first.join("tls.crt"), &first.join("tls.key"));
    let ca = std::fs::read_to_string(first.join("ca.crt")).unwrap();
    let mut options = Options::default().args(&["--cert-reload-interval", "100ms"]);
    options.tls = Some((
        volume_root.join("tls.crt"),
        volume_root.join("tls.key"),
        ca.clone(),
    ));
    let server = Server::start_with(options);

    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let served = Arc::new(AtomicUsize::new(0));
    let seen_leaves = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let body = serde_json::to_vec(&review(
        "rot",
        "CREATE",
        Some(&example("cert-manager-lua-checks.yaml")),
        None,
        &ALICE,
    ))
    .unwrap();
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (stop, failures, served, seen) = (
            stop.clone(),
            failures.clone(),
            served.clone(),
            seen_leaves.clone(),
        );
        let config = tls_config(
            ca.as_bytes(),
            if worker % 2 == 0 {
                &[b"http/1.1"]
            } else {
                &[b"h2"]
            },
            None,
        );
        let (addr, body) = (server.https, body.clone());
        workers.push(tokio::spawn(async move {
            // Bounded: stops on the flag, or after this many requests at the latest.
            for round in 0..5_000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let (mut conn, info) = match connect(addr, config.clone(), "localhost").await {
                    Ok(c) => c,
                    Err(e) => {
                        failures.lock().unwrap().push(format!("connect: {e}"));
                        continue;
                    }
                };
                seen.lock().unwrap().push(info.leaf);
                // A few requests per connection, so old connections outlive the swap.
                for _ in 0..(5 + round % 7) {
                    match conn.post("/validate", body.clone()).await {
                        Ok(r) if r.status == 200 => {
                            served.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(r) => failures
                            .lock()
                            .unwrap()
                            .push(format!("status {}", r.status)),
                        Err(e) => failures.lock().unwrap().push(format!("request: {e}")),
                    }
                }
            }
        }));
    }

    let wait_for_leaf = |leaf: Vec<u8>| {
        let seen = seen_leaves.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if seen
                    .lock()
                    .unwrap()
                    .iter()
                    .rev()
                    .take(4)
                    .any(|l| *l == leaf)
                {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            false
        }
    };
    assert!(wait_for_leaf(leaf_der(&first.join("tls.crt"))).await);
    volume.swap(&second.join("tls.crt"), &second.join("tls.key"));
    assert!(
        wait_for_leaf(leaf_der(&second.join("tls.crt"))).await,
        "new certificate never served"
    );

    // A broken pair (certificate of one, key of another) is refused; the good one stays.
    volume.swap(&broken.join("tls.crt"), &second.join("tls.key"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = server.metrics_text().await;
        if metric(
            &text,
            "promotion_webhook_certificate_reloads_total{result=\"failure\"}",
        ) >= 1.0
        {
            assert_eq!(
                metric(
                    &text,
                    "promotion_webhook_certificate_reloads_total{result=\"success\"}"
                ),
                1.0
            );
            break;
        }
        assert!(Instant::now() < deadline, "broken pair never noticed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = served.load(Ordering::SeqCst);
    assert!(wait_for_leaf(leaf_der(&second.join("tls.crt"))).await);
    let deadline = Instant::now() + Duration::from_secs(30);
    while served.load(Ordering::SeqCst) <= before {
        assert!(
            Instant::now() < deadline,
            "nothing served after the broken swap"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(
        !seen_leaves
            .lock()
            .unwrap()
            .contains(&leaf_der(&broken.join("tls.crt"))),
        "the broken certificate was served"
    );
    server.wait_for_log(|l| l["message"] == "serving certificate reloaded");
    server.wait_for_log(|l| {
        l["message"] == "new serving certificate rejected; keeping the one in use"
            && l["error"]
                .as_str()
                .unwrap_or_default()
                .contains("cannot be used together")
    });
}
