//! krew delivery: `krew/package.sh` builds a release archive and a plugin manifest that pass the
//! rules krew's `validate-krew-manifest` enforces, and the archive installs the way
//! `kubectl krew install --manifest=… --archive=…` installs it, after which the real kubectl lists
//! and runs the plugin.
//!
//! Unix only: the packaging command is a bash script and krew links plugins with symlinks there.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::fs;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod validation;

const BASE_URL: &str = "https://downloads.example.test/kubectl-promotion";

/// The platforms a release ships (krew/promotion.yaml).
const RELEASE_PLATFORMS: [(&str, &str); 5] = [
    ("linux", "amd64"),
    ("linux", "arm64"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
    ("windows", "amd64"),
];

fn repo_root() -> PathBuf {
    promotion_e2e::bins::workspace_root()
}

fn tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// The workspace's `kubectl-promotion`, built first if it is stale.
fn plugin_binary() -> PathBuf {
    promotion_e2e::bins::binary("kubectl-promotion").unwrap_or_else(|e| panic!("{e}"))
}

/// A tiny executable standing in for the plugin where only the packaging and the manifest are
/// under test: a debug build of the real plugin is ~180 MB, and compressing it for each of the
/// five release platforms would dominate the suite.
fn stand_in_binary(dir: &Path) -> PathBuf {
    let path = dir.join("kubectl-promotion-stand-in");
    fs::write(&path, "#!/bin/sh\necho stand-in\n").expect("write the stand-in binary");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    path
}

/// Runs `krew/package.sh` on `binary`.
fn package(binary: &Path, out_dir: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo_root().join("krew/package.sh"))
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(out_dir)
        .args(["--base-url", BASE_URL])
        .args(args)
        .output()
        .expect("run bash krew/package.sh")
}

fn package_ok(binary: &Path, out_dir: &Path, args: &[&str]) -> Packaged {
    let out = package(binary, out_dir, args);
    assert!(
        out.status.success(),
        "krew/package.sh {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    let lines: Vec<&str> = stdout.lines().collect();
    let [archive, sha256, manifest] = lines[..] else {
        panic!("package.sh prints the archive, its sha256 and the manifest; got:\n{stdout}");
    };
    Packaged {
        archive: PathBuf::from(archive),
        sha256: sha256.to_string(),
        manifest: PathBuf::from(manifest),
    }
}

struct Packaged {
    archive: PathBuf,
    sha256: String,
    manifest: PathBuf,
}

fn read_manifest(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn sha256_hex(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    ring::digest::digest(&ring::digest::SHA256, &bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// File names in a .tar.gz, read with the tar and flate2 crates rather than the `tar` that
/// wrote it.
fn archive_entries(archive: &Path) -> BTreeSet<String> {
    let file =
        fs::File::open(archive).unwrap_or_else(|e| panic!("open {}: {e}", archive.display()));
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    tar.entries()
        .expect("a tar.gz archive")
        .map(|entry| {
            let entry = entry.expect("a readable entry");
            entry
                .path()
                .expect("entry path")
                .to_string_lossy()
                .trim_start_matches("./")
                .to_string()
        })
        .collect()
}

/// The content of one file in a .tar.gz.
fn archive_file(archive: &Path, name: &str) -> Vec<u8> {
    let file =
        fs::File::open(archive).unwrap_or_else(|e| panic!("open {}: {e}", archive.display()));
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in tar.entries().expect("a tar.gz archive") {
        let mut entry = entry.expect("a readable entry");
        if entry
            .path()
            .expect("entry path")
            .to_string_lossy()
            .trim_start_matches("./")
            == name
        {
            let mut content = Vec::new();
            entry.read_to_end(&mut content).expect("read the entry");
            return content;
        }
    }
    panic!("{} has no {name}", archive.display());
}

fn host_platform() -> (&'static str, &'static str) {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "windows",
        other => panic!("no krew os for {other}"),
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => panic!("no krew arch for {other}"),
    };
    (os, arch)
}

/// Whether a platform's selector matches the os/arch pair (matchLabels, as our manifest uses).
fn selects(platform: &Value, pair: (&str, &str)) -> bool {
    validation::selector_matches(&platform["selector"], pair)
}

/// What krew-index CI says about a manifest file: its warnings, or its first error.
fn krew_verdict(file_name: &str, manifest: &Value) -> Result<Vec<String>, String> {
    validation::validate_manifest_file(file_name, manifest)
}

/// Conventions of krew's plugin-manifest docs that its validator does not enforce, which our
/// release manifest keeps: a description, and a `.exe` bin on Windows.
fn release_convention_breaches(manifest: &Value) -> Vec<String> {
    let mut breaches = Vec::new();
    if manifest["spec"]["description"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        breaches.push("spec.description is empty".to_string());
    }
    for (i, platform) in manifest["spec"]["platforms"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let bin = platform["bin"].as_str().unwrap_or_default();
        if platform["selector"]["matchLabels"]["os"] == "windows" && !bin.ends_with(".exe") {
            breaches.push(format!("spec.platforms[{i}].bin {bin:?} must end in .exe"));
        }
    }
    breaches
}

/// Does what `kubectl krew install --manifest=<manifest> --archive=<archive>` does for the host:
/// pick the platform, verify the archive's sha256, unpack into `store/<name>/<version>`, link the
/// bin as `bin/kubectl-<name>` and write the receipt. Returns the link.
fn krew_install(root: &Path, manifest_path: &Path, archive: &Path) -> PathBuf {
    let manifest = read_manifest(manifest_path);
    let name = manifest["metadata"]["name"].as_str().expect("plugin name");
    let version = manifest["spec"]["version"]
        .as_str()
        .expect("plugin version");
    let host = host_platform();
    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    let matching: Vec<&Value> = platforms.iter().filter(|p| selects(p, host)).collect();
    assert_eq!(
        matching.len(),
        1,
        "exactly one platform matches the host {host:?}"
    );
    let platform = matching[0];
    assert_eq!(
        platform["sha256"],
        sha256_hex(archive).as_str(),
        "krew verifies the sha256 first"
    );

    let install_dir = root.join("store").join(name).join(version);
    fs::create_dir_all(&install_dir).expect("create the install dir");
    let file = fs::File::open(archive).expect("open the archive");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(&install_dir)
        .expect("unpack the archive");

    let bin = install_dir.join(platform["bin"].as_str().expect("bin"));
    assert!(
        bin.starts_with(&install_dir),
        "bin stays inside the install dir"
    );
    let mode = fs::metadata(&bin).expect("bin exists").permissions().mode();
    assert!(mode & 0o111 != 0, "bin is executable after unpacking");

    // validate-krew-manifest fails an install that extracts no license file.
    let license = fs::read_dir(&install_dir)
        .expect("read the install dir")
        .any(|entry| {
            let file_name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .to_lowercase();
            ["license", "license.txt", "license.md"].contains(&file_name.as_str())
                || file_name.starts_with("licenses")
                || file_name.starts_with("copying")
        });
    assert!(license, "a LICENSE is extracted");

    let bin_dir = root.join("bin");
    fs::create_dir_all(&bin_dir).expect("create the bin dir");
    let link = bin_dir.join(format!("kubectl-{}", name.replace('-', "_")));
    std::os::unix::fs::symlink(&bin, &link).expect("link the plugin");
    let receipts = root.join("receipts");
    fs::create_dir_all(&receipts).expect("create the receipts dir");
    fs::copy(manifest_path, receipts.join(format!("{name}.yaml"))).expect("write the receipt");
    link
}

fn kubectl_path() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("kubectl"))
                .find(|p| p.is_file())
        })
        .expect("kubectl is on PATH")
}

#[test]
fn packaged_plugin_installs_like_krew_and_runs_through_kubectl() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let packaged = package_ok(
        &plugin_binary(),
        &tmp.path().join("dist"),
        &["--version", &tag()],
    );

    assert_eq!(
        packaged.manifest.file_name().and_then(|f| f.to_str()),
        Some("promotion.yaml")
    );
    let manifest = read_manifest(&packaged.manifest);
    assert_eq!(
        krew_verdict("promotion.yaml", &manifest),
        Ok(vec![]),
        "krew-index CI would reject or warn about the manifest"
    );
    assert_eq!(release_convention_breaches(&manifest), Vec::<String>::new());
    assert_eq!(manifest["spec"]["version"], tag().as_str());

    // The host archive, and only it, is in the manifest: with its URL, its real sha256 and a bin
    // that the archive holds next to LICENSE and README.md.
    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    assert_eq!(platforms.len(), 1, "only archives that exist are listed");
    let platform = &platforms[0];
    assert!(selects(platform, host_platform()));
    let archive_name = packaged
        .archive
        .file_name()
        .and_then(|f| f.to_str())
        .expect("archive name");
    assert_eq!(
        platform["uri"],
        format!("{BASE_URL}/{archive_name}").as_str()
    );
    let sha = sha256_hex(&packaged.archive);
    assert_eq!(packaged.sha256, sha);
    assert_eq!(platform["sha256"], sha.as_str());
    let checksum_file =
        fs::read_to_string(packaged.archive.with_extension("gz.sha256")).expect("the .sha256 file");
    assert_eq!(
        checksum_file,
        format!("{sha}  {archive_name}\n"),
        "sha256sum -c format"
    );
    let entries = archive_entries(&packaged.archive);
    let bin = platform["bin"].as_str().expect("bin");
    assert_eq!(
        entries,
        [bin, "LICENSE", "README.md"].map(String::from).into(),
        "archive content"
    );
    let license = archive_file(&packaged.archive, "LICENSE");
    assert!(
        String::from_utf8_lossy(&license).contains("Version 2.0, January 2004"),
        "Apache-2.0"
    );
    for (entry, source) in [("LICENSE", "LICENSE"), ("README.md", "README.md")] {
        assert_eq!(
            archive_file(&packaged.archive, entry),
            fs::read(repo_root().join(source)).expect("read"),
            "{entry}"
        );
    }

    let krew_root = tmp.path().join("krew");
    let link = krew_install(&krew_root, &packaged.manifest, &packaged.archive);

    // Only the krew bin dir and kubectl's own dir on PATH, so nothing else can shadow the plugin.
    let kubectl = kubectl_path();
    let path = std::env::join_paths([
        krew_root.join("bin"),
        kubectl.parent().expect("dir").to_path_buf(),
    ])
    .expect("PATH");
    let kubectl_cmd = |args: &[&str]| {
        Command::new(&kubectl)
            .args(args)
            .env("PATH", &path)
            .env("KUBECONFIG", tmp.path().join("no-kubeconfig"))
            .output()
            .expect("run kubectl")
    };

    let list = kubectl_cmd(&["plugin", "list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "kubectl plugin list failed:\n{listed}\n{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        listed.lines().any(|line| Path::new(line.trim()) == link),
        "kubectl plugin list does not show {}:\n{listed}",
        link.display()
    );

    let version = kubectl_cmd(&["promotion", "version"]);
    let printed = String::from_utf8_lossy(&version.stdout);
    assert!(
        version.status.success(),
        "kubectl promotion version failed ({}):\n{printed}\n{}",
        version.status,
        String::from_utf8_lossy(&version.stderr)
    );
    assert!(
        printed.contains(env!("CARGO_PKG_VERSION")),
        "`kubectl promotion version` does not print {}:\n{printed}",
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn manifest_lists_the_five_release_platforms_without_overlap() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let binary = stand_in_binary(tmp.path());
    let dist = tmp.path().join("dist");
    let mut last = None;
    for (i, (os, arch)) in RELEASE_PLATFORMS.iter().enumerate() {
        let mut args = vec!["--version", "v1.2.3-rc.1", "--os", os, "--arch", arch];
        if i == RELEASE_PLATFORMS.len() - 1 {
            args.push("--require-all");
        }
        last = Some(package_ok(&binary, &dist, &args));
    }
    let manifest_path = last.expect("packaged").manifest;
    let manifest = read_manifest(&manifest_path);
    assert_eq!(
        krew_verdict("promotion.yaml", &manifest),
        Ok(vec![]),
        "krew-index CI would reject or warn about the manifest"
    );
    assert_eq!(release_convention_breaches(&manifest), Vec::<String>::new());
    assert_eq!(manifest["spec"]["version"], "v1.2.3-rc.1");

    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    let covered: BTreeSet<(&str, &str)> = validation::PLATFORMS
        .into_iter()
        .filter(|pair| platforms.iter().any(|p| selects(p, *pair)))
        .collect();
    assert_eq!(covered, RELEASE_PLATFORMS.into(), "platforms covered");
    for platform in platforms {
        let uri = platform["uri"].as_str().expect("uri");
        let archive = dist.join(uri.rsplit('/').next().expect("archive name"));
        assert_eq!(platform["sha256"], sha256_hex(&archive).as_str(), "{uri}");
        let entries = archive_entries(&archive);
        let bin = platform["bin"].as_str().expect("bin");
        assert!(
            entries.contains(bin) && entries.contains("LICENSE"),
            "{uri}: {entries:?}"
        );
    }
}

#[test]
fn packaging_needs_every_platform_when_asked_to() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = package(
        &stand_in_binary(tmp.path()),
        &tmp.path().join("dist"),
        &["--version", &tag(), "--require-all"],
    );
    assert!(
        !out.status.success(),
        "--require-all with only the host archive must fail"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--require-all"), "{stderr}");
}

#[test]
fn packaging_refuses_versions_krew_cannot_parse() {
    for version in ["0.1.0", "v1.2", "v01.2.3", "v1.2.3 "] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dist = tmp.path().join("dist");
        let out = package(&stand_in_binary(tmp.path()), &dist, &["--version", version]);
        assert!(!out.status.success(), "version {version:?} must be refused");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("semantic version"), "{version:?}: {stderr}");
        assert!(!dist.exists(), "nothing is written");
    }
}

#[test]
fn breaking_the_release_manifest_fails_krews_validation() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let packaged = package_ok(
        &stand_in_binary(tmp.path()),
        &tmp.path().join("dist"),
        &["--version", &tag()],
    );
    let valid = read_manifest(&packaged.manifest);
    assert_eq!(krew_verdict("promotion.yaml", &valid), Ok(vec![]));

    // Each breakage, and the words of krew's error for it.
    type Breakage = (&'static str, fn(&mut Value));
    let broken: [Breakage; 9] = [
        ("not supported in this version of krew", |m| {
            m["apiVersion"] = "krew.googlecontainertools.github.com/v1alpha1".into()
        }),
        ("plugin should be named \"promotion\"", |m| {
            m["metadata"]["name"] = "promote".into()
        }),
        ("not starting with 'v'", |m| {
            m["spec"]["version"] = "0.1.0".into()
        }),
        ("line breaks in short description", |m| {
            m["spec"]["shortDescription"] = "two\nlines".into()
        }),
        ("must match pattern ^[a-f0-9]{64}$", |m| {
            let upper = m["spec"]["platforms"][0]["sha256"]
                .as_str()
                .map(str::to_uppercase);
            m["spec"]["platforms"][0]["sha256"] = upper.into();
        }),
        ("`bin` has to be set", |m| {
            m["spec"]["platforms"][0]["bin"] = "".into()
        }),
        ("overlapping selectors", |m| {
            let copy = m["spec"]["platforms"][0].clone();
            if let Some(platforms) = m["spec"]["platforms"].as_array_mut() {
                platforms.push(copy);
            }
        }),
        ("doesn't match any supported platforms", |m| {
            m["spec"]["platforms"][0]["selector"]["matchLabels"]["os"] = "plan9".into()
        }),
        ("key \"libc\" not supported", |m| {
            m["spec"]["platforms"][0]["selector"]["matchLabels"]["libc"] = "musl".into()
        }),
    ];
    for (expected, breaks) in broken {
        let mut manifest = valid.clone();
        breaks(&mut manifest);
        match krew_verdict("promotion.yaml", &manifest) {
            Err(e) => assert!(
                e.contains(expected),
                "expected {expected:?}, krew says: {e}"
            ),
            Ok(warnings) => panic!("breaking it ({expected}) went unnoticed: {warnings:?}"),
        }
    }
    assert!(
        krew_verdict("kubectl-promotion.yaml", &valid).is_err(),
        "the plugin name comes from the file name"
    );
    let mut long = valid.clone();
    long["spec"]["description"] = format!("{}\n", "word ".repeat(20)).into();
    assert_eq!(
        krew_verdict("promotion.yaml", &long),
        Ok(vec![
            "line length in `description` exceeds 80 characters".to_string()
        ])
    );
}
