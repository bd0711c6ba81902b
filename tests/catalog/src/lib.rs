//! The example manifests in `examples/` and what `examples/VERDICTS.md` says each must get.
//!
//! The table is the specification shared by the linter, the validating webhook and the
//! end-to-end tests; this crate reads it once, so no test carries its own transcription of it.
//! A row reads `| file | valid or error | what must be reported |`; the third cell names field
//! paths in backquotes (`` `spec.stages[1].trigger` ``). A cell that starts with "warning"
//! lists warnings; otherwise the paths of an `error` row are errors. A `valid` row that names
//! paths without saying "warning" cannot be read and is an error of this crate, so a new kind
//! of row fails loudly instead of being half understood.
//!
//! Every crate's tests depend on this crate, so it also holds [`proptest_config`]: the seeded
//! configuration all property tests run with.

use std::fmt;
use std::path::PathBuf;

pub mod proptest_config;

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One finding the table requires: its severity and the field path, as the API server writes it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Expected {
    pub severity: Severity,
    pub path: String,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// File name inside `examples/`.
    pub file: String,
    /// `valid` (admitted, possibly with warnings) or `error` (rejected).
    pub valid: bool,
    /// Every finding the example must get, sorted: nothing more, nothing less.
    pub findings: Vec<Expected>,
    /// The row's own words, for failure messages.
    pub note: String,
}

impl Verdict {
    pub fn errors(&self) -> Vec<&str> {
        self.paths(Severity::Error)
    }

    pub fn warnings(&self) -> Vec<&str> {
        self.paths(Severity::Warning)
    }

    fn paths(&self, severity: Severity) -> Vec<&str> {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .map(|f| f.path.as_str())
            .collect()
    }

    /// The example's text.
    pub fn manifest(&self) -> String {
        let path = examples_dir().join(&self.file);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("examples/VERDICTS.md names {}: {e}", path.display()))
    }
}

/// Every row of `examples/VERDICTS.md`, in table order.
pub fn verdicts() -> Vec<Verdict> {
    let path = examples_dir().join("VERDICTS.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The row for one example file.
pub fn verdict(file: &str) -> Verdict {
    verdicts()
        .into_iter()
        .find(|v| v.file == file)
        .unwrap_or_else(|| panic!("examples/VERDICTS.md has no row for {file}"))
}

/// Parse the verdict table (the first Markdown table of the text whose header starts with
/// `| file | verdict |`).
pub fn parse(text: &str) -> Result<Vec<Verdict>, String> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if !in_table {
            in_table = cells.first() == Some(&"file") && cells.get(1) == Some(&"verdict");
            continue;
        }
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue;
        }
        let [file, verdict, note] = cells[..] else {
            return Err(format!("line {}: a row needs three cells", n + 1));
        };
        rows.push(row(file, verdict, note).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    if rows.is_empty() {
        return Err("no verdict table (`| file | verdict | … |`)".into());
    }
    Ok(rows)
}

fn row(file: &str, verdict: &str, note: &str) -> Result<Verdict, String> {
    let valid = match verdict {
        "valid" => true,
        "error" => false,
        other => return Err(format!("verdict {other:?} is neither valid nor error")),
    };
    let paths: Vec<String> = note
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|p| p.starts_with("spec.") || p.starts_with("metadata."))
        .map(String::from)
        .collect();
    let severity = if note.starts_with("warning") {
        Severity::Warning
    } else if !valid {
        Severity::Error
    } else if paths.is_empty() {
        Severity::Warning
    } else {
        return Err(format!(
            "{file} is valid but names paths without saying they are warnings: {note:?}"
        ));
    };
    if !valid && paths.is_empty() {
        return Err(format!("{file} is an error but names no field path"));
    }
    let mut findings: Vec<Expected> = paths
        .into_iter()
        .map(|path| Expected { severity, path })
        .collect();
    findings.sort();
    Ok(Verdict {
        file: file.to_string(),
        valid,
        findings,
        note: note.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_repository_table() {
        let all = verdicts();
        assert!(all.len() >= 11, "{all:?}");
        let cert = all
            .iter()
            .find(|v| v.file == "cert-manager-lua-checks.yaml")
            .unwrap();
        assert!(cert.valid);
        assert_eq!(
            cert.warnings(),
            ["spec.stages[0].trigger.auto.postDelayHealthChecks[0].script"]
        );
        let both = all.iter().find(|v| v.file == "both-triggers.yaml").unwrap();
        assert!(!both.valid);
        assert_eq!(both.errors(), ["spec.stages[1].trigger"]);
        for v in &all {
            assert!(examples_dir().join(&v.file).is_file(), "{}", v.file);
        }
    }

    #[test]
    fn unreadable_rows_are_errors() {
        let head = "| file | verdict | what |\n|---|---|---|\n";
        assert!(parse(&format!("{head}| a.yaml | maybe | x |\n")).is_err());
        assert!(parse(&format!("{head}| a.yaml | valid | at `spec.x` |\n")).is_err());
        assert!(parse(&format!("{head}| a.yaml | error | broken |\n")).is_err());
        assert!(parse("no table").is_err());
        let rows = parse(&format!(
            "{head}| a.yaml | error | `spec.a`: x; `spec.b`: y; the object is named `resource` |\n"
        ))
        .unwrap();
        assert_eq!(rows[0].errors(), ["spec.a", "spec.b"]);
    }
}
