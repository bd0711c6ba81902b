//! `kubectl promotion lint`: what `kubectl apply` (the CRD's schema) and Sveltos (the webhook's
//! rules) would say about ClusterPromotion manifests, offline, with file positions.
//!
//! Exit status: 0 no errors; 1 errors (or warnings with `--strict`), or no ClusterPromotion in the
//! inputs; 2 some input could not be read or is not YAML, or `--crd` is not a usable CRD. Findings go to stdout, the summary to
//! stderr, so `-o json|yaml` stays pure.

mod cross;
mod document;
mod inputs;

use super::Ctx;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crd_schema::{Crd, EMBEDDED_SVELTOS};
use promotion_manifest::Reader;
use promotion_shared::validation::{Severity, VALIDATION_STACK_BYTES};

use crate::render::{Style, Tone};

use document::Run;
pub use document::{apply_refusals, judges};
pub use inputs::Tally;

fn after_help() -> String {
    format!(
        "\
Schema: the built-in ClusterPromotion CRD is the one of
  {EMBEDDED_SVELTOS};
  --crd FILE checks against the CRD your cluster runs instead (any Sveltos version).

Examples:
  kubectl promotion lint -f rollout.yaml
  kubectl promotion lint -f manifests/
  kubectl promotion lint --crd clusterpromotions.yaml -o json manifests/"
    )
}

#[derive(Args, Debug, Clone)]
#[command(
    about = "Check ClusterPromotion manifests offline (CRD schema, Sveltos rules, CEL, Lua, schedules)",
    after_help = after_help()
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
    /// Validate against this ClusterPromotion CRD (a YAML file, e.g. from the Sveltos release
    /// your cluster runs) instead of the built-in one
    #[arg(long, value_name = "FILE")]
    pub crd: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    Text,
    Json,
    Yaml,
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

/// The CRD to validate against: `--crd FILE`, or the built-in one.
fn load_crd(args: &LintArgs) -> Result<Crd, String> {
    let Some(path) = &args.crd else {
        return Ok(Crd::embedded().clone());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--crd {}: cannot read: {e}", path.display()))?;
    Crd::parse(&text, &path.display().to_string()).map_err(|e| format!("--crd {e}"))
}

pub fn run(ctx: &Ctx, args: &LintArgs) -> u8 {
    let style = ctx.out;
    let mut inputs: Vec<PathBuf> = args.paths.clone();
    inputs.extend(args.files.iter().cloned());
    if inputs.is_empty() {
        eprintln!("error: no input: give files or directories to lint, or `-` for stdin");
        eprintln!("usage: kubectl promotion lint [-f] PATH...");
        return 2;
    }
    let crd = match load_crd(args) {
        Ok(crd) => crd,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    // Validation wants a deep stack for adversarial scripts; one thread that has it keeps the
    // stack pages warm across files instead of mapping a fresh stack per object.
    let worker = std::thread::Builder::new()
        .name("lint".into())
        .stack_size(VALIDATION_STACK_BYTES)
        .spawn(move || lint_inputs(&crd, &inputs));
    let (located, tally) = match worker.map(|w| w.join()) {
        Ok(Ok(result)) => result,
        _ => {
            eprintln!("error: the lint worker failed; this is a bug, please report it");
            return 2;
        }
    };
    let count = Count::of(&located);
    if write_findings(ctx, &located, args.output, style).is_err() {
        // A closed pipe (`| head`) is not a lint failure worth a message.
        return if count.errors > 0 { 1 } else { 0 };
    }
    eprintln!("{}", summary(&tally, &count, args.strict));
    if nothing_checked(&tally) {
        eprintln!("error: no ClusterPromotion in the inputs: nothing was checked");
    }
    exit_status(&tally, &located, args.strict)
}

/// 2 when some input could not be read or is not YAML; 1 on errors (or warnings with `strict`),
/// or when no input held a ClusterPromotion.
/// The findings of a run by severity.
#[derive(Clone, Copy)]
struct Count {
    errors: usize,
    warnings: usize,
    infos: usize,
}

impl Count {
    fn of(located: &[Located]) -> Count {
        let of = |severity: Severity| located.iter().filter(|f| f.severity == severity).count();
        Count {
            errors: of(Severity::Error),
            warnings: of(Severity::Warning),
            infos: of(Severity::Info),
        }
    }
}

/// Infos never fail a run, not even with `strict`: they describe settings that work as written.
pub fn exit_status(tally: &Tally, located: &[Located], strict: bool) -> u8 {
    let Count {
        errors, warnings, ..
    } = Count::of(located);
    if tally.unreadable > 0 || tally.not_yaml > 0 {
        2
    } else if errors > 0 || (strict && warnings > 0) {
        1
    } else if nothing_checked(tally) {
        crate::error::exit::lint::NOTHING_CHECKED
    } else {
        0
    }
}

/// Every input was read and none held a ClusterPromotion: as `kubectl apply -f` with nothing to
/// apply ("no objects passed to apply", exit 1), a lint that judged nothing is no pass.
fn nothing_checked(tally: &Tally) -> bool {
    tally.promotions == 0 && tally.unreadable == 0 && tally.not_yaml == 0
}

/// One file's contents judged as `lint FILE` judges them with the built-in CRD, the checks
/// across documents included: the entry point of the `lint` fuzz target.
pub fn lint_bytes(name: &str, bytes: &[u8]) -> (Vec<Located>, Tally) {
    let mut run = Run::new(Crd::embedded());
    run.lint_bytes(name, bytes);
    let mut located = run.located;
    located.extend(cross::check(&run.declared));
    located.sort_by_key(|f| (f.line, f.column));
    (located, run.tally)
}

/// Every input, then the checks across documents; findings grouped by file in input order.
fn lint_inputs(crd: &Crd, inputs: &[PathBuf]) -> (Vec<Located>, Tally) {
    let mut run = Run::new(crd);
    let mut order: Vec<String> = Vec::new();
    let mut reader = Reader::new();
    for input in inputs {
        // Directories recursively, as the help says.
        for source in reader.sources(input, true) {
            let source = match source {
                Ok(source) => source,
                Err(e) => {
                    run.tally.unreadable += 1;
                    run.located.push(inputs::read_error(&e));
                    continue;
                }
            };
            run.tally.files += 1;
            match reader.read(&source) {
                Ok(bytes) => {
                    let name = source.name();
                    order.push(name.clone());
                    run.lint_bytes(&name, &bytes);
                }
                Err(e) => {
                    run.tally.unreadable += 1;
                    run.located.push(inputs::read_error(&e));
                }
            }
        }
    }
    let across = cross::check(&run.declared);
    let mut located = run.located;
    if !across.is_empty() {
        located.extend(across);
        let rank = |file: &str| order.iter().position(|f| f == file).unwrap_or(usize::MAX);
        located.sort_by_key(|f| (rank(&f.file), f.line, f.column));
    }
    (located, run.tally)
}

fn write_findings(
    ctx: &Ctx,
    located: &[Located],
    format: LintFormat,
    style: Style,
) -> crate::error::Result<()> {
    let text = match format {
        LintFormat::Json => {
            let mut text = serde_json::to_string_pretty(located)
                .map_err(|e| crate::error::Error::Io(e.to_string()))?;
            text.push('\n');
            text
        }
        LintFormat::Yaml => crate::render::output::to_yaml(&located)?,
        LintFormat::Text => located
            .iter()
            .map(|f| format!("{}\n", render(f, style)))
            .collect(),
    };
    ctx.write_out(&text)
}

/// One finding as lint prints it: `file:line:col: error[code] path: message`.
pub fn render(f: &Located, style: Style) -> String {
    let severity = match f.severity {
        Severity::Error => style.paint(&format!("error[{}]", f.code), Tone::Bad),
        Severity::Warning => style.paint(&format!("warning[{}]", f.code), Tone::Waiting),
        Severity::Info => style.paint(&format!("info[{}]", f.code), Tone::Dim),
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

fn summary(t: &Tally, count: &Count, strict: bool) -> String {
    let Count {
        errors,
        warnings,
        infos,
    } = *count;
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
    // Said only when there are some, so a run without keeps its familiar summary.
    if infos > 0 {
        s.push_str(&format!(", {}", plural(infos, "info", "infos")));
    }
    if t.unreadable > 0 {
        s.push_str(&format!(
            "; {} could not be read",
            plural(t.unreadable, "input", "inputs")
        ));
    }
    if t.not_yaml > 0 {
        s.push_str(&format!(
            "; {} not YAML",
            plural(t.not_yaml, "file is", "files are")
        ));
    }
    if strict && warnings > 0 && errors == 0 {
        s.push_str(" (warnings fail with --strict)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint_named(name: &str, bytes: &[u8]) -> (Vec<Located>, Tally) {
        let mut run = Run::new(Crd::embedded());
        run.lint_bytes(name, bytes);
        (run.located, run.tally)
    }

    fn lint(text: &str) -> (Vec<Located>, Tally) {
        lint_named("m.yaml", text.as_bytes())
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
        assert_eq!((tally.not_yaml, tally.unreadable), (1, 0));
        assert_eq!(found[0].code, "yaml");
        let (located, tally) = lint_named("bin.yaml", b"a: 1\nb: \xff\xfe\n");
        assert_eq!((tally.not_yaml, tally.unreadable), (1, 0));
        assert_eq!(
            (located[0].line, located[0].column, located[0].code),
            (2, 4, "invalid-utf8")
        );
    }

    fn count(errors: usize, warnings: usize, infos: usize) -> Count {
        Count {
            errors,
            warnings,
            infos,
        }
    }

    #[test]
    fn summary_counts() {
        let t = Tally {
            files: 2,
            promotions: 3,
            skipped: 1,
            unreadable: 0,
            not_yaml: 0,
        };
        assert_eq!(
            summary(&t, &count(1, 2, 0), false),
            "3 ClusterPromotions checked in 2 files (1 other document skipped): 1 error, 2 warnings"
        );
        assert_eq!(
            summary(&t, &count(0, 0, 2), true),
            "3 ClusterPromotions checked in 2 files (1 other document skipped): 0 errors, 0 \
             warnings, 2 infos"
        );
        let t = Tally {
            files: 2,
            promotions: 1,
            skipped: 0,
            unreadable: 1,
            not_yaml: 1,
        };
        assert_eq!(
            summary(&t, &count(0, 0, 0), false),
            "1 ClusterPromotion checked in 2 files: 0 errors, 0 warnings; 1 input could not be read; 1 file is not YAML"
        );
    }

    #[test]
    fn unknown_fields_are_errors_that_suggest_the_declared_name() {
        let text = format!(
            "{HEAD}spec:\n  stages:\n  - name: dev\n    clusterSelectr: {{matchLabels: {{env: dev}}}}\n    trigger:\n      auto:\n        dealy: 5m\n"
        );
        let (found, _) = lint(&text);
        let codes: Vec<(&str, &str)> = found.iter().map(|f| (f.code, f.path.as_str())).collect();
        assert_eq!(
            codes,
            [
                // The absent selector is placed at its stage, the typo at its key.
                ("selector-empty", "spec.stages[0].clusterSelector"),
                ("schema-unknown-field", "spec.stages[0].clusterSelectr"),
                ("schema-unknown-field", "spec.stages[0].trigger.auto.dealy"),
            ]
        );
        assert_eq!((found[1].line, found[1].column), (8, 5));
        assert!(
            found[1]
                .message
                .contains("did you mean \"clusterSelector\"?"),
            "{}",
            found[1].message
        );
        assert!(
            found[2].message.starts_with(
                "unknown field \"spec.stages[0].trigger.auto.dealy\" (did you mean \"delay\"?"
            ),
            "{}",
            found[2].message
        );
    }

    #[test]
    fn the_schema_and_the_engine_report_one_problem_once() {
        let text = format!(
            "{HEAD}spec:\n  stages:\n  - name: dev\n    clusterSelector: {{matchLabels: {{env: dev}}}}\n  - name: dev\n    clusterSelector: {{matchLabels: {{env: prod}}}}\n"
        );
        let (found, _) = lint(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, "stage-name-duplicate");
        assert_eq!(found[0].path, "spec.stages[1]");
        assert!(
            found[0].message.starts_with(
                "Duplicate value: map[string]interface {}{\"name\":\"dev\"} (stage name"
            ),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn promotions_across_files_are_checked_together() {
        let dir = tempfile::tempdir().unwrap();
        let write = |file: &str, name: &str, stage: &str| {
            let path = dir.path().join(file);
            std::fs::write(
                &path,
                format!("apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata:\n  name: {name}\nspec:\n  stages:\n  - name: {stage}\n    clusterSelector: {{matchLabels: {{env: x}}}}\n"),
            )
            .unwrap();
            path
        };
        let a = write("a.yaml", "web", "eu-prod");
        let b = write("b.yaml", "web-eu", "prod");
        let c = write("c.yaml", "web", "dev");
        let (found, tally) = lint_inputs(Crd::embedded(), &[a, b, c]);
        assert_eq!(tally.promotions, 3);
        let got: Vec<(String, &str, &str)> = found
            .iter()
            .map(|f| {
                let file = std::path::Path::new(&f.file)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (file, f.code, f.path.as_str())
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "b.yaml".to_string(),
                    "profile-name-collision",
                    "spec.stages[0].name"
                ),
                (
                    "c.yaml".to_string(),
                    "promotion-name-duplicate",
                    "metadata.name"
                ),
            ]
        );
        assert!(
            found[1].message.contains("a.yaml:4:3"),
            "{}",
            found[1].message
        );
    }

    #[test]
    fn a_missing_input_is_unreadable_not_yaml() {
        let (found, tally) = lint_inputs(
            Crd::embedded(),
            &[std::path::PathBuf::from("/definitely/not/here.yaml")],
        );
        assert_eq!((tally.unreadable, tally.not_yaml, tally.files), (1, 0, 0));
        assert_eq!(found[0].code, "unreadable");
        assert_eq!(found[0].message, "cannot read: no such file or directory");
    }
}
