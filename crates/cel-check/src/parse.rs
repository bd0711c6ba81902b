//! Parsing with the `cel` crate's ANTLR parser, set up as cel-go's default `env.Parse`: the same
//! grammar, backquoted field names allowed, optional syntax off. Macros are left as the calls
//! they are written as ([`super::macros`] expands them as cel-go does), so that the recursion
//! limits can be measured on the tree cel-go's parser visits.

use cel::common::ast::SourceInfo;
use cel::parser::{ParseError, Parser};
use cel::{Env, IdedExpr};

use super::depth::{recursion_limit_message, MAX_RECURSION_DEPTH};
use super::issue::{Issue, Stage};

pub struct Parsed {
    pub expr: IdedExpr,
    pub info: SourceInfo,
}

/// `parser` set up as cel-go's default `env.Parse`: backquoted field names allowed, optional
/// syntax off. The health runner parses with the same settings (and the standard macros), so it
/// never refuses a rule lint accepts.
pub fn as_cel_go(parser: Parser) -> Parser {
    // The crate's own limit only counts `expr` nesting and checks it one level late, so at 250
    // it never refuses what cel-go accepts; [`super::depth`] applies cel-go's exact limits.
    parser
        .enable_optional_syntax(false)
        .enable_ident_escape_syntax(true)
        .max_recursion_depth(MAX_RECURSION_DEPTH as u16)
}

pub fn parse(rule: &str) -> Result<Parsed, Vec<Issue>> {
    let parser = as_cel_go(Env::default().with_optional_support(false).parser());
    // The crate's parser panics on some inputs (see `crate::panics`).
    match crate::panics::catch_expected(|| parser.parse_with_source_info(rule)) {
        Ok(Ok((expr, info))) => Ok(Parsed { expr, info }),
        Ok(Err(errors)) => {
            // The crate's visitor also complains about the holes syntax errors leave in the
            // parse tree; cel-go's visitor stays silent about them when ANTLR reported anything.
            let reported: Vec<&ParseError> = errors
                .errors
                .iter()
                .filter(|e| !is_visitor_complaint(&e.msg))
                .collect();
            let shown = if reported.is_empty() {
                errors.errors.iter().collect()
            } else {
                reported
            };
            let issues: Vec<Issue> = shown.into_iter().map(issue).collect();
            // cel-go's parser stops at the recursion limit (the listener panics), so nothing
            // else is reported with it.
            match issues
                .iter()
                .find(|i| i.message == recursion_limit_message())
            {
                Some(limit) => Err(vec![limit.clone()]),
                None => Err(issues),
            }
        }
        Err(_) => Err(vec![Issue::new(
            Stage::Syntax,
            None,
            "the parser gave up on this input",
        )]),
    }
}

/// A parser error as cel-go words it: no `Syntax error: ` prefix (the finding says it), no Rust
/// debug output.
fn issue(e: &ParseError) -> Issue {
    let source = e.source.as_ref().map(|s| s.to_string()).unwrap_or_default();
    if e.msg.contains("Recursion limit of") || source.contains("Recursion limit of") {
        return Issue::new(Stage::Syntax, None, recursion_limit_message());
    }
    let at = (e.pos.0 >= 1 && e.pos.1 >= 1).then_some((e.pos.0 as usize, e.pos.1 as usize));
    let msg = e.msg.strip_prefix("Syntax error: ").unwrap_or(&e.msg);
    let message =
        if msg.starts_with("invalid string literal") || msg.starts_with("invalid bytes literal") {
            // cel-go's unescape: code points outside Unicode are the only escapes the grammar lets through.
            if msg.contains("Unicode") || msg.contains("unicode") {
                "invalid unicode code point".to_string()
            } else {
                "unable to unescape string".to_string()
            }
        } else if let Some(m) = reserved_word_after_dot(msg) {
            m
        } else if msg == "UNKNOWN" || msg.contains('{') && msg.contains("ParseError") {
            "the parser gave up on this input".to_string()
        } else {
            msg.to_string()
        };
    Issue::new(Stage::Syntax, at, message)
}

/// Messages of the crate's tree visitor about parse-tree nodes that a syntax error left empty.
fn is_visitor_complaint(msg: &str) -> bool {
    msg.starts_with("No `")
        || msg.starts_with("Incomplete ")
        || msg.starts_with("Unknown `")
        || msg == "unsupported ident kind"
        || msg == "unsupported ident type"
}

/// cel-go keeps the message of older versions when a keyword follows a `.`: "no viable
/// alternative at input '.true'" becomes "mismatched input 'true' expecting IDENTIFIER".
fn reserved_word_after_dot(msg: &str) -> Option<String> {
    let word = msg
        .strip_prefix("no viable alternative at input '")?
        .strip_suffix('\'')?;
    let keyword = ["true", "false", "null"]
        .into_iter()
        .find(|k| word.len() == k.len() + 1 && word.ends_with(k))?;
    Some(format!("mismatched input '{keyword}' expecting IDENTIFIER"))
}
