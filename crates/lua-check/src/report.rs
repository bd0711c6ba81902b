//! Findings for Lua errors: gopher-lua's reason and position, plus a hint where a habit from
//! another language is the likely cause.

use super::compile::CompileError;
use super::lexer::EOF_LINE;
use super::parser::SyntaxError;
use super::MAX_NESTING;
use promotion_findings::{FieldPath, Finding};

/// Longest "near" text quoted in a message (gopher-lua quotes whole string literals).
const NEAR_CHARS: usize = 60;

/// gopher-lua's reason, as its `parse.Error` prints it after the position.
pub fn syntax_reason(e: &SyntaxError) -> String {
    if e.line == EOF_LINE {
        format!("at EOF: {}", e.message)
    } else {
        format!("near '{}': {}", printable(&e.near), e.message)
    }
}

/// The token text, with control characters escaped (a message stays on one line) and long
/// texts shortened.
fn printable(near: &[u8]) -> String {
    let text = String::from_utf8_lossy(near);
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == NEAR_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Where the script ends: its last non-blank byte (gopher-lua reports "EOF" without a line).
/// Lines are counted as the scanner counts them: CR, LF, CRLF and LFCR each end one.
fn end_of(script: &str) -> (usize, usize) {
    let trimmed = script.trim_end().as_bytes();
    let (mut line, mut column) = (1, 0);
    let mut i = 0;
    while let Some(&b) = trimmed.get(i) {
        i += 1;
        if b == b'\n' || b == b'\r' {
            line += 1;
            column = 0;
            if matches!(
                (b, trimmed.get(i)),
                (b'\n', Some(b'\r')) | (b'\r', Some(b'\n'))
            ) {
                i += 1;
            }
        } else {
            column += 1;
        }
    }
    (line, column.max(1))
}

fn position(script: &str, e: &SyntaxError) -> (usize, usize) {
    if e.line == EOF_LINE {
        return end_of(script);
    }
    (e.line.max(1) as usize, e.column.max(0) as usize)
}

/// The bytes of the script from 1-based `line`, `column` on.
fn rest_of_line(script: &str, line: usize, column: usize) -> &[u8] {
    script
        .split('\n')
        .nth(line.saturating_sub(1))
        .map(str::as_bytes)
        .and_then(|l| l.get(column.saturating_sub(1)..))
        .unwrap_or_default()
}

fn hint(script: &str, e: &SyntaxError, line: usize, column: usize) -> &'static str {
    if e.line == EOF_LINE {
        return if e.message == "syntax error" {
            " (a block may be missing its `end`, or a bracket its closing one)"
        } else {
            ""
        };
    }
    let rest = rest_of_line(script, line, column);
    match (&*e.near, e.message) {
        (b"!", "Invalid token") if rest.starts_with(b"!=") => " (Lua writes \"not equal\" as ~=)",
        (b"!", "Invalid token") => " (Lua negates with `not`)",
        (b"&" | b"|", "Invalid token") => " (Lua uses `and` / `or`)",
        (b"#", "syntax error") if line == 1 && column == 1 => {
            " (a \"#!\" first line is only skipped when Lua loads a file, not a script string)"
        }
        (b"+" | b"-" | b"*" | b"/" | b"%" | b"^", _) if rest.get(1) == Some(&b'=') => {
            " (Lua has no compound assignment: write `x = x + 1`)"
        }
        _ => "",
    }
}

pub fn syntax(script: &str, path: &FieldPath, e: &SyntaxError) -> Finding {
    let (line, column) = position(script, e);
    Finding::error(
        "lua-syntax",
        path,
        format!(
            "Lua syntax error at line {line}, column {column}: {}{}",
            syntax_reason(e),
            hint(script, e, line, column)
        ),
    )
    // The message keeps gopher-lua's column, which is 0 right after a newline (an unterminated
    // string); the position is 1-based.
    .at(line, column.max(1))
}

pub fn compile(script: &str, path: &FieldPath, e: &CompileError) -> Finding {
    // gopher-lua may name the line after the last one (a chunk's end); point at the script.
    let lines = script.trim_end().lines().count().max(1);
    let line = (e.line.max(1) as usize).min(lines);
    Finding::error(
        "lua-syntax",
        path,
        format!("Lua compile error at line {}: {}", e.line, e.message),
    )
    .at(line, 1)
}

pub fn too_deep(path: &FieldPath, line: i32, column: i32) -> Finding {
    Finding::error(
        "lua-too-deep",
        path,
        format!(
            "script nests more than {MAX_NESTING} levels deep (blocks, function bodies, calls, \
             tables, operators and `elseif` branches each count); health-check scripts are \
             limited to {MAX_NESTING}"
        ),
    )
    .at(line.max(1) as usize, column.max(1) as usize)
}
