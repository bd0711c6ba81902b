//! Lua health-check scripts, judged as gopher-lua (Lua 5.1 plus `goto`/labels) would run them.
//!
//! full_moon's Lua 5.2 grammar is the closest match to gopher-lua: it accepts `goto` and labels
//! (which gopher-lua accepts and a 5.1 grammar rejects) and rejects 5.3+ operators.

use full_moon::ast::{Ast, Stmt, Var};
use full_moon::tokenizer::{Lexer, LexerResult, Token, TokenType};
use full_moon::LuaVersion;

use super::{FieldPath, Finding};

/// Health-check scripts are tens of lines; this keeps the parser's work and stack bounded.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// PUC Lua 5.1 refuses deeper nesting ("chunk has too many syntax levels").
pub const MAX_NESTING: usize = 200;
/// Scripts longer than this get a token-level nesting check before parsing.
const PRESCAN_BYTES: usize = 1024;

pub fn check_script(script: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    // The parse and the AST's drop recurse as deep as the script nests.
    super::on_parser_stack(|| check_script_inner(script, path, out));
}

fn check_script_inner(script: &str, path: &FieldPath, out: &mut Vec<Finding>) {
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
    // Short scripts cannot nest deep enough to matter; skip the extra lexing pass for them.
    if script.len() > PRESCAN_BYTES {
        if let LexerResult::Ok(tokens) = Lexer::new(script, LuaVersion::lua52()).collect() {
            if let Some((depth, line, col)) = excessive_nesting(&tokens) {
                out.push(
                    Finding::error(
                        "lua-too-deep",
                        path,
                        format!(
                            "script nests {depth} levels deep; at most {MAX_NESTING} are accepted \
                             (PUC Lua 5.1: \"chunk has too many syntax levels\")"
                        ),
                    )
                    .at(line, col),
                );
                return;
            }
        }
    }
    let parsed =
        std::panic::catch_unwind(|| full_moon::parse_fallible(script, LuaVersion::lua52()));
    let Ok(result) = parsed else {
        out.push(Finding::error(
            "lua-syntax",
            path,
            "script could not be parsed (the parser gave up on this input)",
        ));
        return;
    };
    if let Some(e) = result.errors().first() {
        let (start, _) = e.range();
        let (line, col) = (start.line(), start.character());
        let more = match result.errors().len() {
            1 => String::new(),
            n => format!(" (and {} more after it)", n - 1),
        };
        out.push(
            Finding::error(
                "lua-syntax",
                path,
                format!(
                    "Lua syntax error at line {line}, column {col}: {}{}{more}",
                    describe_error(&e.error_message()),
                    hint_for(script, line, col)
                ),
            )
            .at(line, col),
        );
        return;
    }
    check_evaluate(result.ast(), path, out);
    check_healthy(script, path, out);
}

fn check_evaluate(ast: &Ast, path: &FieldPath, out: &mut Vec<Finding>) {
    let mut local_at = None;
    let is_evaluate = |t: &full_moon::tokenizer::TokenReference| is_ident(t.token(), "evaluate");
    for stmt in ast.nodes().stmts() {
        let defines_global = match stmt {
            Stmt::FunctionDeclaration(f) => {
                let names = f.name().names();
                names.len() == 1
                    && f.name().method_name().is_none()
                    && names.iter().any(is_evaluate)
            }
            Stmt::Assignment(a) => a
                .variables()
                .iter()
                .any(|v| matches!(v, Var::Name(n) if is_evaluate(n))),
            Stmt::LocalFunction(f) if is_evaluate(f.name()) => {
                let p = f.name().token().start_position();
                local_at = Some((p.line(), p.character()));
                false
            }
            _ => false,
        };
        if defines_global {
            return;
        }
    }
    match local_at {
        Some((line, col)) => out.push(
            Finding::error(
                "lua-no-evaluate",
                path,
                "`evaluate` is declared `local`; Sveltos calls the global function `evaluate`, \
                 so drop `local`",
            )
            .at(line, col),
        ),
        None => out.push(Finding::error(
            "lua-no-evaluate",
            path,
            "script does not define a global function `evaluate`; Sveltos calls `evaluate()` \
             (the resource is the global `obj`) and fails the check without it",
        )),
    }
}

/// Sveltos reads only `healthy` from the returned table; a script that never mentions it can
/// never pass. (The `{status = "Healthy"}` shape belongs to ClusterHealthCheck, not ValidateHealth.)
/// A word search is enough here: a script that only mentions `healthy` in a comment is rare,
/// and then staying quiet is the cheaper mistake.
fn check_healthy(script: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    if mentions_word(script, "healthy") {
        return;
    }
    let hint = if mentions_word(script, "status") {
        " It sets `status`, which is the ClusterHealthCheck format; ValidateHealth reads `healthy`."
    } else {
        ""
    };
    out.push(Finding::warning(
        "lua-no-healthy",
        path,
        format!(
            "the result table never sets `healthy`, so this check can never pass (Sveltos treats a \
             missing `healthy` as unhealthy).{hint}"
        ),
    ));
}

fn mentions_word(text: &str, word: &str) -> bool {
    let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).any(|(i, _)| {
        !is_ident(text[..i].chars().next_back()) && !is_ident(text[i + word.len()..].chars().next())
    })
}

/// full_moon's tokenizer messages end with their own range; the finding carries the position.
fn describe_error(message: &str) -> String {
    match message.rfind(" (") {
        Some(i) if message.ends_with(')') && message[i..].contains(" to ") => {
            message[..i].to_string()
        }
        _ => message.to_string(),
    }
}

/// Habits from other languages that Lua spells differently.
fn hint_for(script: &str, line: usize, col: usize) -> &'static str {
    let rest = script
        .lines()
        .nth(line.saturating_sub(1))
        .and_then(|l| l.get(col.saturating_sub(1)..))
        .unwrap_or("");
    if rest.starts_with("!=") {
        " (Lua writes \"not equal\" as ~=)"
    } else if rest.starts_with("&&") || rest.starts_with("||") {
        " (Lua uses `and` / `or`)"
    } else if rest.starts_with('!') {
        " (Lua negates with `not`)"
    } else {
        ""
    }
}

fn is_ident(token: &Token, name: &str) -> bool {
    matches!(token.token_type(), TokenType::Identifier { identifier } if identifier.as_str() == name)
}

/// An upper bound of the parser's recursion depth: open brackets and blocks, plus the current
/// run of prefix operators and of right-associative operators (`..`, `^`), which full_moon
/// parses recursively.
fn excessive_nesting(tokens: &[Token]) -> Option<(usize, usize, usize)> {
    let mut depth: usize = 0;
    let mut unary: usize = 0;
    let mut right_chain: usize = 0;
    let mut operand_before = false;
    for token in tokens {
        let text = match token.token_type() {
            TokenType::Whitespace { .. }
            | TokenType::SingleLineComment { .. }
            | TokenType::MultiLineComment { .. }
            | TokenType::Shebang { .. }
            | TokenType::Eof => continue,
            TokenType::Symbol { symbol } => symbol.to_string(),
            _ => {
                unary = 0;
                operand_before = true;
                continue;
            }
        };
        let mut is_unary = false;
        match text.as_str() {
            "(" | "{" | "[" | "function" | "do" | "if" | "repeat" => depth += 1,
            ")" | "}" | "]" | "end" | "until" => depth = depth.saturating_sub(1),
            "not" | "#" => is_unary = true,
            "-" if !operand_before => is_unary = true,
            ".." | "^" => right_chain += 1,
            "." | ":" | "-" | "+" | "*" | "/" | "%" => {}
            _ => right_chain = 0,
        }
        unary = if is_unary { unary + 1 } else { 0 };
        operand_before = matches!(
            text.as_str(),
            ")" | "}" | "]" | "end" | "true" | "false" | "nil" | "..."
        );
        let bound = depth + unary + right_chain;
        if bound > MAX_NESTING {
            let p = token.start_position();
            return Some((bound, p.line(), p.character()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(script: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        check_script(script, &FieldPath::root("script"), &mut out);
        out
    }

    fn codes(script: &str) -> Vec<&'static str> {
        check(script).iter().map(|f| f.code).collect()
    }

    const GOOD: &str = "function evaluate()\n  local hs = {healthy = false, message = \"x\"}\n  if obj.status ~= nil then hs.healthy = true end\n  return hs\nend\n";

    #[test]
    fn accepts_a_sveltos_script() {
        assert!(check(GOOD).is_empty());
    }

    #[test]
    fn accepts_goto_like_gopher_lua() {
        let s = "function evaluate(obj)\n  local hs = {healthy = true}\n  for i = 1, 3 do\n    if i == 2 then goto continue end\n    ::continue::\n  end\n  return hs\nend\n";
        assert!(check(s).is_empty(), "{:?}", check(s));
    }

    #[test]
    fn rejects_lua_53_operators() {
        assert_eq!(
            codes("function evaluate() local x = 7 // 2 return {healthy = true} end"),
            ["lua-syntax"]
        );
        assert_eq!(
            codes("function evaluate() local x = 7 & 2 return {healthy = true} end"),
            ["lua-syntax"]
        );
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        let f = check("function evaluate()\n  if obj.status != nil then\n    return {healthy = true}\n  end\nend\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "lua-syntax");
        assert_eq!(f[0].inner.map(|p| p.0), Some(2));
    }

    #[test]
    fn missing_end_is_an_error() {
        assert_eq!(
            codes("function evaluate()\n  return {healthy = true}\n"),
            ["lua-syntax"]
        );
    }

    #[test]
    fn requires_global_evaluate() {
        assert_eq!(
            codes("function check() return {healthy = true} end"),
            ["lua-no-evaluate"]
        );
        let local = check("local function evaluate() return {healthy = true} end");
        assert_eq!(local[0].code, "lua-no-evaluate");
        assert!(local[0].message.contains("local"));
        assert!(check("evaluate = function() return {healthy = true} end").is_empty());
    }

    #[test]
    fn warns_when_healthy_is_never_set() {
        let f =
            check("function evaluate()\n  hs = {}\n  hs.status = \"Healthy\"\n  return hs\nend");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "lua-no-healthy");
        assert_eq!(f[0].severity, super::super::Severity::Warning);
        assert!(f[0].message.contains("status"));
        assert!(check("function evaluate() return {[\"healthy\"] = true} end").is_empty());
    }

    #[test]
    fn deep_nesting_is_a_finding_not_a_crash() {
        let deep = format!(
            "function evaluate() return {}1{} end",
            "(".repeat(10_000),
            ")".repeat(10_000)
        );
        assert_eq!(codes(&deep), ["lua-too-deep"]);
        let unary = format!("function evaluate() return {}1 end", "- ".repeat(5_000));
        assert_eq!(codes(&unary), ["lua-too-deep"]);
        let blocks = format!(
            "function evaluate() {} return {{healthy = true}} {} end",
            "do ".repeat(1_000),
            "end ".repeat(1_000)
        );
        assert_eq!(codes(&blocks), ["lua-too-deep"]);
    }

    #[test]
    fn oversized_script_is_refused() {
        assert_eq!(codes(&"-- x\n".repeat(20_000)), ["lua-too-large"]);
    }

    #[test]
    fn unterminated_string_is_a_syntax_error() {
        assert_eq!(
            codes("function evaluate() return {healthy = \"x} end"),
            ["lua-syntax"]
        );
    }
}
