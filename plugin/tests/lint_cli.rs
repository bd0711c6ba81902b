//! `kubectl promotion lint` as users run it: the real binary, files, directories, stdin,
//! exit codes and both output formats.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn lint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .arg("lint")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn example(name: &str) -> String {
    examples().join(name).display().to_string()
}

#[test]
fn valid_example_passes_with_exit_0() {
    let o = lint(&[&example("kyverno-manual-gate.yaml")]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("1 ClusterPromotion checked in 1 file"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("0 errors, 0 warnings"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn errors_are_reported_at_file_positions_with_exit_1() {
    let file = example("both-triggers.yaml");
    let o = lint(&["-f", &file]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    // `trigger:` of the second stage is on line 28, column 5.
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "{file}:28:5: error[trigger-both] spec.stages[1].trigger: both `auto` and `manual` are set; \
             a stage is promoted either automatically or by approval, so keep one"
        )
    );
}

#[test]
fn script_errors_point_into_the_script() {
    let file = example("lua-syntax-error.yaml");
    let o = lint(&[&file]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let line: usize = out.split(':').nth(1).unwrap().parse().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    // The reported line is the one in the file holding the offending `!=`.
    assert!(text.lines().nth(line - 1).unwrap().contains("!="), "{out}");
    assert!(
        out.contains("error[lua-syntax] spec.profileSpec.validateHealths[0].script"),
        "{out}"
    );

    let file = example("cel-syntax-error.yaml");
    let o = lint(&[&file]);
    let out = stdout(&o);
    let fields: Vec<&str> = out.splitn(4, ':').collect();
    let (line, col): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let line_text = text.lines().nth(line - 1).unwrap();
    assert!(line_text.contains("rule: (resource"), "{line_text}");
    assert!(
        col > line_text.find('(').unwrap(),
        "column {col} points into the rule: {out}"
    );
}

#[test]
fn json_output_lists_every_finding() {
    let o = lint(&["-o", "json", &examples().display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let findings: Vec<Value> = serde_json::from_slice(&o.stdout).expect("stdout is pure JSON");
    let mut got: Vec<(String, String, String)> = findings
        .iter()
        .map(|f| {
            let file = Path::new(f["file"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                file,
                f["severity"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    // Exactly the findings examples/VERDICTS.md lists, file by file.
    let mut expected: Vec<(String, String, String)> = promotion_examples::verdicts()
        .into_iter()
        .flat_map(|v| {
            v.findings
                .into_iter()
                .map(move |f| (v.file.clone(), f.severity.to_string(), f.path))
        })
        .collect();
    expected.sort();
    assert_eq!(got, expected);
    for f in &findings {
        for key in [
            "file", "line", "column", "severity", "code", "path", "message",
        ] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
    }
    let n = promotion_examples::verdicts().len();
    assert!(
        stderr(&o).contains(&format!("{n} ClusterPromotions checked in {n} files")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn strict_fails_on_warnings() {
    let file = example("cert-manager-lua-checks.yaml");
    assert_eq!(lint(&[&file]).status.code(), Some(0));
    let o = lint(&["--strict", &file]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("warning[lua-no-healthy]"));
}

#[test]
fn stdin_multi_document_and_other_kinds() {
    let manifest = std::fs::read_to_string(examples().join("validation-job-self.yaml")).unwrap();
    let input = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\n{manifest}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .args(["lint", "-"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.starts_with("<stdin>:"), "{out}");
    assert!(out.contains("undeclared reference to `self`"), "{out}");
    assert!(
        stderr(&o).contains("(1 other document skipped)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unreadable_or_non_yaml_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "spec:\n  stages: [1, 2\n").unwrap();
    let o = lint(&[&bad.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).starts_with(&format!("{}:", bad.display())),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("error[yaml]"));

    let binary = dir.path().join("binary.yaml");
    std::fs::write(&binary, b"kind: \xff\n").unwrap();
    let o = lint(&[&binary.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains(":1:7: error[invalid-utf8]"),
        "{}",
        stdout(&o)
    );

    let o = lint(&["/definitely/not/here.yaml"]);
    assert_eq!(o.status.code(), Some(2));

    // A readable file with errors beside an unreadable one: still 2, and both are reported.
    let o = lint(&[&bad.display().to_string(), &example("both-triggers.yaml")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("trigger-both"));
}

#[test]
fn directories_are_walked_recursively_for_manifests_only() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(examples().join("both-triggers.yaml"), nested.join("x.yml")).unwrap();
    std::fs::copy(
        examples().join("kyverno-manual-gate.yaml"),
        dir.path().join("y.json.txt"),
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "not: [a manifest").unwrap();
    let o = lint(&[&dir.path().display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("1 ClusterPromotion checked in 1 file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn no_input_is_a_usage_error() {
    let o = lint(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("usage"));
}
