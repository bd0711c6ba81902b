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
    // `trigger:` of the second stage is on line 28, column 5: the API server's words, then ours.
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "{file}:28:5: error[trigger-both] spec.stages[1].trigger: Invalid value: \"object\": A \
             trigger must have either a 'manual' or 'auto' field, but not both. (both `auto` and \
             `manual` are set; a stage is promoted either automatically or by approval, so keep one)"
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
    // Exactly the findings examples/VERDICTS.md lists, file by file, plus one across files: two
    // examples define the same promotion (two states of one rollout), which applying the
    // directory would make one object.
    let mut expected: Vec<(String, String, String)> = promotion_examples::verdicts()
        .into_iter()
        .flat_map(|v| {
            v.findings
                .into_iter()
                .map(move |f| (v.file.clone(), f.severity.to_string(), f.path))
        })
        .collect();
    expected.push((
        "kyverno-rollout-auto.yaml".into(),
        "error".into(),
        "metadata.name".into(),
    ));
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
fn each_example_alone_gets_exactly_its_verdict() {
    for verdict in promotion_examples::verdicts() {
        let o = lint(&["-o", "json", &example(&verdict.file)]);
        let findings: Vec<Value> = serde_json::from_slice(&o.stdout).expect("stdout is pure JSON");
        let mut got: Vec<(String, String)> = findings
            .iter()
            .map(|f| {
                (
                    f["severity"].as_str().unwrap().to_string(),
                    f["path"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        got.sort();
        let expected: Vec<(String, String)> = verdict
            .findings
            .iter()
            .map(|f| (f.severity.to_string(), f.path.clone()))
            .collect();
        assert_eq!(got, expected, "{}: {}", verdict.file, verdict.note);
        assert_eq!(
            o.status.code(),
            Some(if verdict.valid { 0 } else { 1 }),
            "{}",
            verdict.file
        );
    }
}

#[test]
fn yaml_output_carries_the_same_findings_as_json() {
    let dir = examples().display().to_string();
    let json: Value = serde_json::from_slice(&lint(&["-o", "json", &dir]).stdout).unwrap();
    let o = lint(&["-o", "yaml", &dir]);
    assert_eq!(o.status.code(), Some(1));
    let yaml: Value = serde_saphyr::from_str(&stdout(&o)).expect("stdout is pure YAML");
    assert_eq!(yaml, json);
}

/// The embedded CRD with one field added where a newer Sveltos might add it.
fn crd_with_on_failure(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/crd-schema/crds/config.projectsveltos.io_clusterpromotions.yaml"),
    )
    .unwrap();
    let anchor = "\n                    trigger:\n";
    assert_eq!(
        text.matches(anchor).count(),
        1,
        "one stage trigger property"
    );
    let text = text.replacen(
        anchor,
        "\n                    onFailure:\n                      enum: [Pause, Rollback]\n                      type: string\n                    trigger:\n",
        1,
    );
    let path = dir.join("crd.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn crd_flag_validates_against_another_sveltos_version() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("p.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata: {name: p}\nspec:\n  stages:\n  - name: dev\n    clusterSelector: {matchLabels: {env: dev}}\n    onFailure: Pause\n",
    )
    .unwrap();
    let manifest = manifest.display().to_string();
    // The embedded CRD does not know the field...
    let o = lint(&[&manifest]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("error[schema-unknown-field] spec.stages[0].onFailure"),
        "{}",
        stdout(&o)
    );
    // ...a CRD that declares it accepts it, and judges its value by that CRD.
    let crd = crd_with_on_failure(dir.path()).display().to_string();
    let o = lint(&["--crd", &crd, &manifest]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let bad = manifest.replace("p.yaml", "q.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&manifest)
            .unwrap()
            .replace("Pause", "Stop"),
    )
    .unwrap();
    let o = lint(&["--crd", &crd, &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o)
            .contains("error[schema-enum] spec.stages[0].onFailure: Unsupported value: \"Stop\""),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_crd_file_that_is_not_one_is_refused_with_exit_2() {
    let o = lint(&[
        "--crd",
        &example("both-triggers.yaml"),
        &example("both-triggers.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no CustomResourceDefinition in this file"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn help_names_the_sveltos_version_of_the_built_in_crd() {
    let o = lint(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains(crd_schema::EMBEDDED_SVELTOS),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("--crd"), "{}", stdout(&o));
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
    assert!(
        stdout(&o).contains("error[unreadable]")
            && stderr(&o).contains("1 input could not be read"),
        "a missing file is unreadable, not \"not YAML\": {}{}",
        stdout(&o),
        stderr(&o)
    );

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

/// A generated name is checked only where Sveltos creates it, against the limit that applies
/// there: `preverification-<promotion>-<stage>` exists only with a preHealthCheckDeployment, and
/// then must fit the 63-character label value Sveltos copies it into.
#[test]
fn the_pre_verification_name_is_checked_only_where_sveltos_creates_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = |pre: bool| {
        let trigger = if pre {
            "{auto: {delay: 5m, preHealthCheckDeployment: [{kind: ConfigMap, name: job, namespace: default}]}}"
        } else {
            "{auto: {delay: 5m}}"
        };
        format!(
            "apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterPromotion
metadata:
  name: payments-platform-rollout
spec:
  profileSpec:
    helmCharts:
    - {{repositoryURL: \"https://charts.example\", repositoryName: pay, chartName: pay/pay, chartVersion: \"1.0.0\", releaseName: pay, releaseNamespace: pay}}
  stages:
  - name: europe-west-production-canary
    clusterSelector: {{matchLabels: {{env: canary}}}}
    trigger: {trigger}
"
        )
    };
    let plain = dir.path().join("plain.yaml");
    std::fs::write(&plain, manifest(false)).unwrap();
    let out = lint(&[plain.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");

    let with_pre = dir.path().join("pre.yaml");
    std::fs::write(&with_pre, manifest(true)).unwrap();
    let out = lint(&[with_pre.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("error[stage-name-too-long]"), "{text}");
    assert!(
        text.contains(
            "\"preverification-payments-platform-rollout-europe-west-production-canary\""
        ),
        "{text}"
    );
    assert!(
        text.contains("must be no more than 63 characters"),
        "{text}"
    );
    assert!(!text.contains("RFC 1123 subdomain"), "{text}");
}

/// As `kubectl apply -f` with nothing to apply: an empty directory, or files without a
/// ClusterPromotion, are no pass.
#[test]
fn inputs_without_a_promotion_are_no_pass() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = lint(&[dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 ClusterPromotions checked in 0 files"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("error: no ClusterPromotion in the inputs: nothing was checked"),
        "{}",
        stderr(&out)
    );
    let cm = dir.path().join("cm.yaml");
    std::fs::write(
        &cm,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let out = lint(&[cm.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was checked"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn approve_help_says_the_last_stage_is_approved_like_any_other() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-promotion"))
        .args(["approve", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("The last stage's gate is approved like any other: approving it lets the pipeline complete."), "{help}");
    assert!(!help.contains("and the last stage, listing"), "{help}");
}

/// A flow mapping never closed is reported on the line kubectl names (`kubectl create -f` on
/// this file: `yaml: line 3: did not find expected ',' or '}'`), at its `{`, saying where the
/// parser gave up.
#[test]
fn an_unclosed_flow_mapping_is_placed_where_kubectl_places_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\ndata:\n  a: b\n",
    )
    .unwrap();
    let out = lint(&[file.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let text = stdout(&out) + &stderr(&out);
    assert!(
        text.contains(&format!(
            "{}:3:11: error[yaml] not valid YAML: a flow mapping not closed: did not find \
             expected ',' or '}}' (found line 4, column 5 instead)",
            file.display()
        )),
        "{text}"
    );
}

/// A flow sequence never closed, as kubectl reports it (`kubectl create -f` on these files:
/// `yaml: line 6: did not find expected ',' or ']'`, then `line 6` again): at its `[` when the
/// parser gave up on the next line, else on the line kubectl names, saying where the `[` opened.
/// The key after it (`d: e`, folded into the entry `c d`) is what go-yaml finds instead of `,`.
#[test]
fn an_unclosed_flow_sequence_is_placed_where_kubectl_places_it() {
    let dir = tempfile::tempdir().unwrap();
    let next_line = dir.path().join("next.yaml");
    std::fs::write(
        &next_line,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: [b, c\n  d: e\n",
    )
    .unwrap();
    let further = dir.path().join("further.yaml");
    std::fs::write(
        &further,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: [a,\n   b\ndata:\n  a: b\n",
    )
    .unwrap();
    for (file, expected) in [
        (
            &next_line,
            "6:6: error[yaml] not valid YAML: a flow sequence not closed: did not find expected \
             ',' or ']' (found line 7, column 4 instead)",
        ),
        (
            &further,
            "6:4: error[yaml] not valid YAML: a flow sequence opened at line 5, column 11 not \
             closed: did not find expected ',' or ']' (found line 7, column 5 instead)",
        ),
    ] {
        let out = lint(&[file.to_str().unwrap()]);
        assert_ne!(out.status.code(), Some(0));
        let text = stdout(&out) + &stderr(&out);
        assert!(
            text.contains(&format!("{}:{expected}", file.display())),
            "{text}"
        );
    }
}

/// A `promotionWindow` on the last stage (issue 32 item 9): an info at the window's line, in text
/// and JSON, that never fails the run, not even with `--strict`.
#[test]
fn a_window_on_the_last_stage_is_an_info_that_never_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rollout.yaml");
    std::fs::write(
        &file,
        "apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterPromotion
metadata:
  name: web
spec:
  profileSpec:
    syncMode: Continuous
  stages:
  - name: staging
    clusterSelector: {matchLabels: {env: staging}}
    trigger:
      auto:
        delay: 1h
  - name: prod
    clusterSelector: {matchLabels: {env: prod}}
    trigger:
      auto:
        promotionWindow:
          from: 0 9 * * 1
          to: 0 17 * * 5
",
    )
    .unwrap();
    let file = file.display().to_string();
    let o = lint(&["--strict", &file]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!(
            "{file}:18:9: info[trigger-last-stage-window] \
             spec.stages[1].trigger.auto.promotionWindow: the window (from \"0 9 * * 1\" to \
             \"0 17 * * 5\") is on the last stage, prod: "
        )),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(
            "move it to stage staging's trigger (spec.stages[0].trigger.auto.promotionWindow)"
        ),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("0 errors, 0 warnings, 1 info"),
        "{}",
        stderr(&o)
    );
    let json: Value = serde_json::from_str(&stdout(&lint(&["-o", "json", &file]))).unwrap();
    assert_eq!(json[0]["severity"], "info", "{json}");
    assert_eq!(json[0]["code"], "trigger-last-stage-window", "{json}");
}
