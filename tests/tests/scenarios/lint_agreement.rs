//! `lint` fails exactly where `kubectl apply` does. Each manifest of
//! `shared/tests/fixtures/mistakes/` (the mistakes people make, plus a few the cluster accepts)
//! goes through `kubectl apply --dry-run=server` (kubectl's default strict field validation,
//! no webhook) and through `kubectl promotion lint`:
//! - the server answers exactly what the fixture recorded from kube-apiserver v1.32
//!   (`# server:` lines; on the stand-in this checks the stand-in, on envtest the record);
//! - lint fails if and only if the server refuses, and names every field the server names;
//! - lint reports exactly the fixture's `# lint:` findings.

use std::path::PathBuf;

use promotion_e2e::backend::Cluster;
use promotion_e2e::bins::{binary, run};
use promotion_e2e::envtest::User;
use serde_json::Value;

use super::support::kubectl;

fn fixtures() -> Vec<PathBuf> {
    let dir = promotion_e2e::bins::workspace_root().join("shared/tests/fixtures/mistakes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn tagged(text: &str, tag: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(tag))
        .map(str::to_string)
        .collect()
}

/// kubectl's output as the fixture records it: `accepted`, the unknown fields of a strict
/// decoding error, or the field errors of a 422.
fn server_lines(stdout: &str, stderr: &str) -> Vec<String> {
    let text = format!("{stdout}{stderr}");
    if text.contains("created (server dry run)") {
        return vec!["accepted".into()];
    }
    if let Some((_, rest)) = text.split_once("strict decoding error: ") {
        return rest
            .trim()
            .split(", unknown field ")
            .map(|u| {
                let u = u.trim_start_matches("unknown field ");
                format!("unknown field {u}")
            })
            .collect();
    }
    if let Some((_, rest)) = text.split_once("is invalid: ") {
        let rest = rest.trim_end();
        if rest.starts_with('\n') || rest.starts_with("\r\n") || rest.is_empty() {
            return rest
                .lines()
                .filter_map(|l| l.strip_prefix("* "))
                .map(str::to_string)
                .collect();
        }
        return vec![rest.to_string()];
    }
    vec![format!("unexpected answer: {text}")]
}

pub fn lint_fails_exactly_where_kubectl_apply_does(cluster: &Cluster) {
    let plugin = binary("kubectl-promotion").unwrap_or_else(|e| panic!("{e}"));
    let files = fixtures();
    assert!(files.len() >= 24, "the mistake corpus is there");
    for file in files {
        let path = file.to_string_lossy().into_owned();
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
        let context = format!("[{}] {name}", cluster.kind().name());

        let out = kubectl(
            cluster,
            User::Admin,
            &["apply", "--dry-run=server", "-f", &path],
        );
        let server = server_lines(&out.stdout, &out.stderr);
        assert_eq!(server, tagged(&text, "# server: "), "{context}: {out}");

        let lint = run(std::process::Command::new(&plugin).args(["lint", "-o", "json", &path]))
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        let findings: Vec<Value> = serde_json::from_str(&lint.stdout)
            .unwrap_or_else(|e| panic!("{context}: lint -o json: {e}: {lint}"));
        let accepted = server == ["accepted"];
        assert_eq!(
            lint.code,
            if accepted { 0 } else { 1 },
            "{context}: lint's verdict: {lint}"
        );
        let errors: Vec<&str> = findings
            .iter()
            .filter(|f| f["severity"] == "error")
            .filter_map(|f| f["path"].as_str())
            .collect();
        for line in &server {
            let field = match line.strip_prefix("unknown field ") {
                Some(quoted) => quoted.trim_matches('"'),
                None => line.split(": ").next().unwrap_or_default(),
            };
            if field != "<nil>" && line != "accepted" {
                assert!(
                    errors.contains(&field),
                    "{context}: the server names {field}; lint: {errors:?}"
                );
            }
        }
        let mut got: Vec<String> = findings
            .iter()
            .map(|f| {
                format!(
                    "{} {} {}",
                    f["severity"].as_str().unwrap_or_default(),
                    f["code"].as_str().unwrap_or_default(),
                    f["path"].as_str().unwrap_or_default()
                )
            })
            .collect();
        got.sort();
        let mut expected = tagged(&text, "# lint: ");
        expected.sort();
        assert_eq!(got, expected, "{context}: {}", lint.stdout);
    }
}
