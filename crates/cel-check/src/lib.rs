//! CEL health rules, judged as libsveltos evaluates them: cel-go's `cel.NewEnv` with the one
//! variable `resource` of type `dyn` and no extension libraries, then `env.Parse`, `env.Check`
//! and `env.Program`; the result must be a bool.
//!
//! A rule is accepted when cel-go would compile it and its checked type is `bool` (a
//! `google.protobuf.BoolValue` counts) or `dyn`. The steps, each in its own module:
//! [`parse`] (the `cel` crate's ANTLR parser, macros left unexpanded), [`depth`] (cel-go's two
//! recursion limits), [`macros`] (cel-go's expansion), [`checker`] (a port of cel-go's type
//! checker over [`types`] and [`stdlib`]) and [`plan`] (what `env.Program` refuses).

mod checker;
mod depth;
mod issue;
mod macros;
mod parse;

pub mod panics;
mod plan;
mod stdlib;
mod types;

use checker::Checked;
use issue::{Issue, Stage};
pub use parse::as_cel_go;
use promotion_findings::{on_parser_stack, FieldPath, Finding};
use types::{is_exact, Type, BOOL};

/// cel-go's own limit is 100k code points; health rules are one or two lines.
pub const MAX_RULE_BYTES: usize = 16 * 1024;
pub const VARIABLE: &str = "resource";

pub fn check_rule(rule: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    // Parsing, checking and dropping the tree all recurse as deep as the rule nests.
    on_parser_stack(|| check_rule_inner(rule, path, out));
}

fn check_rule_inner(rule: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    if rule.len() > MAX_RULE_BYTES {
        out.push(Finding::error(
            "cel-too-large",
            path,
            format!(
                "rule is {} bytes; CEL health rules are limited to {MAX_RULE_BYTES} bytes",
                rule.len()
            ),
        ));
        return;
    }
    if rule.trim().is_empty() {
        out.push(Finding::error("cel-syntax", path, "CEL rule is empty"));
        return;
    }
    match compile(rule) {
        Err(mut issues) => out.push(finding(path, &mut issues)),
        Ok(checked) => {
            if let Some(f) = result_finding(path, &checked) {
                out.push(f);
            }
        }
    }
}

/// What cel-go's `Parse`, `Check` and `Program` make of `rule`: the problems of the first step
/// that fails, or the checked rule.
fn compile(rule: &str) -> Result<Checked, Vec<Issue>> {
    let parsed = parse::parse(rule)?;
    if let Some(issue) = depth::check(rule, &parsed.expr, depth::MAX_RECURSION_DEPTH) {
        return Err(vec![issue]);
    }
    let mut info = parsed.info;
    let expanded = macros::expand(rule, parsed.expr, &mut info);
    if !expanded.issues.is_empty() {
        return Err(expanded.issues);
    }
    let checked = checker::check(rule, &expanded.expr, &info);
    if !checked.issues.is_empty() {
        return Err(checked.issues);
    }
    if let Some(issue) = plan::check(&expanded.expr) {
        return Err(vec![issue]);
    }
    Ok(checked)
}

/// The first problem as cel-go sorts them (by position), the others counted.
fn finding(path: &FieldPath, issues: &mut [Issue]) -> Finding {
    issue::sort(issues);
    let Some(first) = issues.first() else {
        return Finding::error("cel-syntax", path, "CEL rule could not be compiled");
    };
    let (code, what) = match first.stage {
        Stage::Syntax => ("cel-syntax", "CEL syntax error"),
        Stage::Undeclared => ("cel-undeclared", "CEL check error"),
        Stage::Type => ("cel-type", "CEL check error"),
        Stage::Plan => ("cel-type", "CEL program error"),
    };
    let place = first
        .at
        .map(|(line, column)| format!(" at line {line}, column {column}"))
        .unwrap_or_default();
    let hint = first.hint.map(|h| format!(" ({h})")).unwrap_or_default();
    let more = match issues.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more after it)", n - 1),
    };
    let message = match &first.name {
        // Said the way lint says names, then cel-go's words as Sveltos logs them.
        Some(name) if first.stage == Stage::Undeclared => format!(
            "undeclared reference to `{name}`{place}{hint}; cel-go: {}{more}",
            first.message
        ),
        _ => format!("{what}{place}: {}{hint}{more}", first.message),
    };
    let f = Finding::error(code, path, message);
    match first.at {
        Some((line, column)) => f.at(line, column),
        None => f,
    }
}

/// The rule compiled: Sveltos still needs a bool at evaluation.
fn result_finding(path: &FieldPath, checked: &Checked) -> Option<Finding> {
    let output = &checked.output;
    if is_exact(output, &BOOL) {
        return None;
    }
    if *output != Type::Dyn {
        return Some(Finding::error(
            "cel-not-boolean",
            path,
            format!(
                "the rule's type is '{output}', not bool: Sveltos fails every evaluation with \"expected boolean result\""
            ),
        ));
    }
    let (function, results) = checked.never_bool.as_ref()?;
    let results: Vec<String> = results.iter().map(ToString::to_string).collect();
    Some(Finding::warning(
        "cel-not-boolean",
        path,
        format!(
            "cel-go types this rule as dyn, but its value comes from '{function}', which returns {}, never a bool: Sveltos fails such an evaluation with \"expected boolean result\"",
            results.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests;
