//! Bakes the target triple and, when known, the git commit into the binary for `version`.

use std::process::Command;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=KUBECTL_PROMOTION_TARGET={target}");
    println!("cargo:rerun-if-env-changed=KUBECTL_PROMOTION_GIT_COMMIT");
    // CI and release builds pass the commit explicitly; a checkout build asks git (read-only).
    let commit = std::env::var("KUBECTL_PROMOTION_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            let out = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .filter(|c| !c.is_empty())
        })
        .unwrap_or_default();
    println!("cargo:rustc-env=KUBECTL_PROMOTION_GIT_COMMIT={commit}");
    // One version line for `--version` and `version`.
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let shown = if commit.is_empty() {
        "unknown"
    } else {
        commit.as_str()
    };
    println!(
        "cargo:rustc-env=KUBECTL_PROMOTION_VERSION_LINE=v{version} (commit {shown}, {target})"
    );
    if let Ok(head) = std::fs::read_to_string("../.git/HEAD") {
        println!("cargo:rerun-if-changed=../.git/HEAD");
        if let Some(r) = head.strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=../.git/{}", r.trim());
        }
    }
}
