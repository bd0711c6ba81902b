//! `kubectl promotion lint`: the webhook's judgment, offline, with file positions.
//!
//! Exit status: 0 no errors; 1 errors (or warnings with `--strict`); 2 some input could not be
//! read or is not YAML. Findings go to stdout, the summary to stderr, so `-o json` stays pure.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use promotion_shared::model::is_cluster_promotion;
use promotion_shared::source::{parse_documents, position_of_byte, Pos, SourceDocument};
use promotion_shared::validation::{validate, Finding, Severity, VALIDATION_STACK_BYTES};

use crate::render::{Style, Tone};

#[derive(Args, Debug, Clone)]
#[command(
    about = "Check ClusterPromotion manifests offline (schema, CEL, Lua, schedules)",
    after_help = "\
Examples:
  kubectl promotion lint -f rollout.yaml
  kubectl promotion lint -f manifests/"
)]
pub struct LintArgs {
    /// Files or directories to check (directories recursively: *.yaml, *.yml, *.json); `-` reads stdin
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Same as a positional PATH (kubectl style); may be repeated
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Output format
    #[arg(short = 'o', long = "output", value_enum, default_value_t = LintFormat::Text)]
    pub output: LintFormat,
    /// Fail (exit 1) on warnings too
    #[arg(long)]
    pub strict: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    Text,
    Json,
}

/// One finding, located in its file.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Located {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    pub code: &'static str,
    pub path: String,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct Tally {
    pub files: usize,
    pub promotions: usize,
    pub skipped: usize,
    pub unreadable: usize,
}

pub fn run(args: &LintArgs, style: Style) -> u8 {
    let mut inputs: Vec<PathBuf> = args.paths.clone();
    inputs.extend(args.files.iter().cloned());
    if inputs.is_empty() {
        eprintln!("error: no input: give files or directories to lint, or `-` for stdin");
        eprintln!("usage: kubectl promotion lint [-f] PATH...");
        return 2;
    }
    // Validation wants a deep stack for adversarial scripts; one thread that has it keeps the
    // stack pages warm across files instead of mapping a fresh stack per object.
    let worker = std::thread::Builder::new()
        .name("lint".into())
        .stack_size(VALIDATION_STACK_BYTES)
        .spawn(move || {
            let mut tally = Tally::default();
            let mut located = Vec::new();
            for input in &inputs {
                for file in expand(input, &mut located, &mut tally) {
                    lint_file(&file, &mut located, &mut tally);
                }
            }
            (located, tally)
        });
    let (located, tally) = match worker.map(|w| w.join()) {
        Ok(Ok(result)) => result,
        _ => {
            eprintln!("error: the lint worker failed; this is a bug, please report it");
            return 2;
        }
    };
    let errors = located
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = located.len() - errors;
    let mut stdout = std::io::stdout().lock();
    let written = match args.output {
        LintFormat::Json => serde_json::to_writer_pretty(&mut stdout, &located)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(stdout)),
        LintFormat::Text => located
            .iter()
            .try_for_each(|f| writeln!(stdout, "{}", render(f, style))),
    };
    if written.is_err() {
        // A closed pipe (`| head`) is not a lint failure worth a message.
        return if errors > 0 { 1 } else { 0 };
    }
    eprintln!("{}", summary(&tally, errors, warnings, args.strict));
    if tally.unreadable > 0 {
        2
    } else if errors > 0 || (args.strict && warnings > 0) {
        1
    } else {
        0
    }
}

fn render(f: &Located, style: Style) -> String {
    let severity = match f.severity {
        Severity::Error => style.paint(&format!("error[{}]", f.code), Tone::Bad),
        Severity::Warning => style.paint(&format!("warning[{}]", f.code), Tone::Waiting),
    };
    let path = if f.path.is_empty() {
        String::new()
    } else {
        format!(" {}:", style.paint(&f.path, Tone::Strong))
    };
    format!(
        "{}:{}:{}: {severity}{path} {}",
        f.file, f.line, f.column, f.message
    )
}

fn summary(t: &Tally, errors: usize, warnings: usize, strict: bool) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut s = format!(
        "{} checked in {}",
        plural(t.promotions, "ClusterPromotion", "ClusterPromotions"),
        plural(t.files, "file", "files")
    );
    if t.skipped > 0 {
        s.push_str(&format!(
            " ({} skipped)",
            plural(t.skipped, "other document", "other documents")
        ));
    }
    s.push_str(&format!(
        ": {}, {}",
        plural(errors, "error", "errors"),
        plural(warnings, "warning", "warnings")
    ));
    if t.unreadable > 0 {
        s.push_str(&format!(
            "; {} could not be read as YAML",
            plural(t.unreadable, "input", "inputs")
        ));
    }
    if strict && warnings > 0 && errors == 0 {
        s.push_str(" (warnings fail with --strict)");
    }
    s
}

/// Files to lint for one command-line input: a named file is linted whatever its extension;
/// a directory contributes its manifests, sorted, recursively.
fn expand(input: &Path, located: &mut Vec<Located>, tally: &mut Tally) -> Vec<PathBuf> {
    if input.as_os_str() == "-" || input.is_file() {
        return vec![input.to_path_buf()];
    }
    if !input.is_dir() {
        tally.unreadable += 1;
        located.push(read_error(
            &input.display().to_string(),
            "no such file or directory",
        ));
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut pending = vec![input.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                tally.unreadable += 1;
                located.push(read_error(&dir.display().to_string(), &e.to_string()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if is_manifest(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

fn read_error(file: &str, reason: &str) -> Located {
    Located {
        file: file.to_string(),
        line: 1,
        column: 1,
        severity: Severity::Error,
        code: "unreadable",
        path: String::new(),
        message: format!("cannot read: {reason}"),
    }
}

fn lint_file(path: &Path, located: &mut Vec<Located>, tally: &mut Tally) {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        let read = std::io::stdin().lock().read_to_end(&mut buf);
        ("<stdin>".to_string(), read.map(|_| buf))
    } else {
        (path.display().to_string(), std::fs::read(path))
    };
    tally.files += 1;
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            tally.unreadable += 1;
            located.push(read_error(&name, &e.to_string()));
            return;
        }
    };
    lint_bytes(&name, &bytes, located, tally);
}

/// One file's contents, as `lint FILE` judges them (also the entry point of the `lint` fuzz target).
pub fn lint_bytes(name: &str, bytes: &[u8], located: &mut Vec<Located>, tally: &mut Tally) {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            tally.unreadable += 1;
            let pos = position_of_byte(bytes, e.valid_up_to());
            located.push(not_yaml(
                name,
                pos,
                "invalid-utf8",
                "file is not valid UTF-8".into(),
            ));
            return;
        }
    };
    let docs = match parse_documents(text) {
        Ok(d) => d,
        Err(e) => {
            tally.unreadable += 1;
            located.push(not_yaml(
                name,
                e.pos,
                "yaml",
                format!("not valid YAML: {}", e.message),
            ));
            return;
        }
    };
    for doc in &docs {
        lint_document(name, doc, located, tally);
    }
}

fn not_yaml(file: &str, pos: Pos, code: &'static str, message: String) -> Located {
    Located {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        severity: Severity::Error,
        code,
        path: String::new(),
        message,
    }
}

/// A document is a ClusterPromotion, a `List` holding some, or something else (skipped).
fn lint_document(file: &str, doc: &SourceDocument, located: &mut Vec<Located>, tally: &mut Tally) {
    match &doc.value {
        Value::Null => {}
        v if is_cluster_promotion(v) => {
            tally.promotions += 1;
            push_findings(file, doc, "", validate(v), located);
        }
        v if v.get("kind").and_then(Value::as_str) == Some("List") => {
            let items = v
                .get("items")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for (i, item) in items.iter().enumerate() {
                if is_cluster_promotion(item) {
                    tally.promotions += 1;
                    push_findings(file, doc, &format!("items[{i}]."), validate(item), located);
                } else {
                    tally.skipped += 1;
                }
            }
        }
        _ => tally.skipped += 1,
    }
}

fn push_findings(
    file: &str,
    doc: &SourceDocument,
    prefix: &str,
    findings: Vec<Finding>,
    out: &mut Vec<Located>,
) {
    for f in findings {
        let pos = doc.locate(&format!("{prefix}{}", f.path), f.inner);
        out.push(Located {
            file: file.to_string(),
            line: pos.line,
            column: pos.column,
            severity: f.severity,
            code: f.code,
            path: f.path,
            message: f.message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(text: &str) -> (Vec<Located>, Tally) {
        let mut located = Vec::new();
        let mut tally = Tally::default();
        lint_bytes("m.yaml", text.as_bytes(), &mut located, &mut tally);
        (located, tally)
    }

    const HEAD: &str = "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata:\n  name: p\n";

    #[test]
    fn locates_findings_in_block_yaml() {
        let text = format!(
            "{HEAD}spec:\n  stages:\n  - name: dev\n    clusterSelector: {{matchLabels: {{env: dev}}}}\n    trigger:\n      auto:\n        delay: 1d\n  - name: prod\n    clusterSelector: {{matchLabels: {{env: prod}}}}\n"
        );
        let (found, tally) = lint(&text);
        assert_eq!(tally.promotions, 1);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].column), (11, 9));
        assert_eq!(found[0].path, "spec.stages[0].trigger.auto.delay");
        assert_eq!(
            render(&found[0], Style::plain()),
            format!(
                "m.yaml:11:9: error[duration-invalid] spec.stages[0].trigger.auto.delay: {}",
                found[0].message
            )
        );
    }

    #[test]
    fn locates_findings_in_flow_yaml() {
        let text = format!(
            "{HEAD}spec: {{stages: [{{name: dev, clusterSelector: {{matchLabels: {{env: dev}}}}, trigger: {{}}}}, {{name: prod, clusterSelector: {{matchLabels: {{env: prod}}}}}}]}}\n"
        );
        let (found, _) = lint(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, "trigger-empty");
        assert_eq!(found[0].line, 5);
        assert_eq!(
            &text.lines().nth(4).unwrap()[found[0].column - 1..][..8],
            "trigger:"
        );
    }

    #[test]
    fn maps_script_lines_to_file_lines() {
        let text = format!(
            "{HEAD}spec:\n  profileSpec:\n    policyRefs: [{{kind: ConfigMap, name: a, namespace: b}}]\n    validateHealths:\n    - name: c\n      featureID: Resources\n      kind: Pod\n      script: |\n        function evaluate()\n          local hs = {{healthy = true}}\n          if x != nil then end\n          return hs\n        end\n  stages:\n  - name: dev\n    clusterSelector: {{matchLabels: {{env: dev}}}}\n"
        );
        let (found, _) = lint(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, "lua-syntax");
        // The script's third line is the file's 15th.
        assert_eq!(found[0].line, 15);
        assert!(text.lines().nth(14).unwrap().contains("!="));
    }

    #[test]
    fn skips_other_kinds_and_reads_lists() {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: config.projectsveltos.io/v1beta1\n  kind: ClusterPromotion\n  metadata: {{name: p}}\n  spec:\n    stages:\n    - name: Dev\n      clusterSelector: {{matchLabels: {{env: dev}}}}\n- {{apiVersion: v1, kind: Secret}}\n---\n{HEAD}spec: {{stages: [{{name: a, clusterSelector: {{matchLabels: {{a: b}}}}}}]}}\n"
        );
        let (found, tally) = lint(&text);
        assert_eq!(tally.promotions, 2);
        assert_eq!(tally.skipped, 2);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "spec.stages[0].name");
        assert_eq!(found[0].line, 13);
    }

    #[test]
    fn bad_input_is_reported_with_a_position() {
        let (found, tally) = lint("a: [1,\nb: 2\n");
        assert_eq!(tally.unreadable, 1);
        assert_eq!(found[0].code, "yaml");
        let mut located = Vec::new();
        let mut tally = Tally::default();
        lint_bytes("bin.yaml", b"a: 1\nb: \xff\xfe\n", &mut located, &mut tally);
        assert_eq!(tally.unreadable, 1);
        assert_eq!(
            (located[0].line, located[0].column, located[0].code),
            (2, 4, "invalid-utf8")
        );
    }

    #[test]
    fn summary_counts() {
        let t = Tally {
            files: 2,
            promotions: 3,
            skipped: 1,
            unreadable: 0,
        };
        assert_eq!(
            summary(&t, 1, 2, false),
            "3 ClusterPromotions checked in 2 files (1 other document skipped): 1 error, 2 warnings"
        );
    }
}
