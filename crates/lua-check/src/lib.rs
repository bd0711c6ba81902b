//! Lua health-check scripts, judged as Sveltos runs them.
//!
//! Sveltos hands a script to gopher-lua v1.1.2's `LState.DoString`, which parses it
//! (`parse.Parse`) and compiles it (`lua.Compile`) before running anything; a script either
//! step rejects fails the health check every time. This module is a port of that front end,
//! so that a verdict, its message and its position are gopher-lua's:
//! - `lexer.rs`: `parse/lexer.go`;
//! - `grammar.rs`, `lalr.rs`, `parser.rs`: `parse/parser.go.y`, built into LALR(1) tables
//!   the way goyacc builds them and driven the way goyacc's `yyParse` drives them (goyacc's
//!   default reductions decide which error is met first, and where);
//! - `ast.rs`: gopher-lua's syntax tree, line numbers included;
//! - `compile/`: `compile.go`, whose errors depend on the code it generates.
//!
//! The first finding for a script is always the error gopher-lua reports. gopher-lua stops
//! there; further findings are errors that cannot be consequences of the first:
//! - after a syntax error, the script is cut before each line that starts at column 1 with
//!   a statement keyword (`function name`, `local`, `if`, `for`, `while`, `repeat`, `do`,
//!   `goto`, `::`). A piece after the error's own reports its first syntax error unless that
//!   error is at the piece's end or at `end`/`else`/`elseif`/`until` (where the cut itself
//!   may be to blame); every piece that parses reports the compile errors inside its
//!   functions (`recovery.rs`);
//! - after a compile error, the other functions are still compiled: an error stops only the
//!   function it is in, so each function reports at most its first error (`compile/`).
//!
//! Two limits are this checker's own, not gopher-lua's: scripts over [`MAX_SCRIPT_BYTES`]
//! (`lua-too-large`) and syntax trees nesting deeper than [`MAX_NESTING`] (`lua-too-deep`).
//! The parser keeps its stack in a vector; only the walks over the finished tree recurse
//! (compiler, rules, dropping it), and the parser stops before the tree gets deeper than the
//! limit. So no script can overflow the thread's stack, whatever its size.
//!
//! Scripts that compile are then held to Sveltos' contract (`rules.rs`): a global `evaluate`
//! (`lua-no-evaluate`) whose result can carry `healthy` (`lua-no-healthy`).

mod ast;
mod compile;
mod grammar;
mod lalr;
mod lexer;
mod parser;
mod recovery;
mod report;
mod rules;
#[cfg(test)]
mod tests;

use lexer::Scanner;
use parser::Failure;
use promotion_findings::{FieldPath, Finding};
use recovery::Later;
use rules::{Evaluate, Facts};

/// Health-check scripts are tens of lines; this bounds the work per script.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// How deep a script's syntax tree may nest: every statement, expression, table and function
/// body is a level, and each `elseif` one more (gopher-lua nests them). Every walk over the
/// tree recurses once per level; at this depth the deepest walk needs between 512 and 768 KiB
/// of stack unoptimized, measured (`deepest_script_fits_a_small_stack` runs the deepest
/// accepted scripts on a 1 MiB thread; a tokio worker has 2 MiB).
pub const MAX_NESTING: usize = 200;

pub fn check_script(script: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    if script.len() > MAX_SCRIPT_BYTES {
        out.push(Finding::error(
            "lua-too-large",
            path,
            format!(
                "script is {} bytes; health-check scripts are limited to {} bytes",
                script.len(),
                MAX_SCRIPT_BYTES
            ),
        ));
        return;
    }
    let src = script.as_bytes();
    let chunk = match parser::parse(&mut Scanner::new(src), MAX_NESTING) {
        Ok(chunk) => chunk,
        Err(Failure::TooDeep { line, column }) => {
            out.push(report::too_deep(path, line, column));
            return;
        }
        Err(Failure::Syntax(first)) => {
            out.push(report::syntax(script, path, &first));
            for later in recovery::later_errors(src, &first, MAX_NESTING) {
                out.push(match later {
                    Later::Syntax(e) => report::syntax(script, path, &e),
                    Later::Compile(e) => report::compile(script, path, &e),
                });
            }
            return;
        }
    };
    let errors = compile::compile(&chunk);
    if !errors.is_empty() {
        out.extend(
            errors
                .iter()
                .map(|l| report::compile(script, path, &l.error)),
        );
        return;
    }
    let evaluate = match rules::find_evaluate(&chunk) {
        Evaluate::Functions(bodies) => bodies,
        Evaluate::Unknown => return,
        Evaluate::Local(line, column) => {
            out.push(
                Finding::error(
                    "lua-no-evaluate",
                    path,
                    "`evaluate` is declared `local`; Sveltos calls the global function `evaluate`, \
                     so drop `local`",
                )
                .at(line.max(1) as usize, column.max(1) as usize),
            );
            return;
        }
        Evaluate::Missing => {
            out.push(Finding::error(
                "lua-no-evaluate",
                path,
                "script does not define a global function `evaluate`; Sveltos calls `evaluate()` \
                 (the resource is the global `obj`) and fails the check without it",
            ));
            return;
        }
    };
    let facts = Facts::of(&chunk);
    if facts.never_healthy(&evaluate) {
        // Short enough that, after its field path, it stays one admission warning (the API
        // server splits warnings over 256 characters).
        let hint = if facts.sets_status {
            "; `status` is the ClusterHealthCheck format, ValidateHealth reads `healthy`"
        } else {
            ""
        };
        out.push(Finding::warning(
            "lua-no-healthy",
            path,
            format!(
                "the result never sets `healthy`, so the check cannot pass (Sveltos reads a \
                 missing `healthy` as unhealthy){hint}"
            ),
        ));
    }
}
