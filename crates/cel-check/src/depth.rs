//! cel-go's two recursion limits, both 250 by default (`parser/parser.go`):
//!
//! - while parsing, a listener counts how deeply each grammar rule is nested (per rule, so
//!   `((x))` nests `expr` twice) and fails with `expression recursion limit exceeded: 250`.
//!   Operator chains do not nest (ANTLR turns left recursion into loops), but the right operand
//!   of a binary operator is a fresh `relation` or `calc`, so `1 + (1 + (1 + ...))` nests
//!   `calc` twice per parenthesis;
//! - while building the tree, the visitor counts nested ternaries, relations, arithmetic,
//!   field selections, member calls and index operations (parentheses and `&&`/`||` chains do
//!   not count), failing with `max recursion depth exceeded`.
//!
//! The `cel` crate's parser gives neither count, so the first is measured by replaying the
//! grammar's rule structure over the tokens of a rule that already parsed, and the second on the
//! tree before macros are expanded (cel-go counts the call a macro replaces). The parser's
//! tests (`TestRecursionLimit`) pin both down; see the unit tests below.

use cel::common::ast::{EntryExpr, Expr};
use cel::IdedExpr;

use super::issue::{Issue, Stage};

pub const MAX_RECURSION_DEPTH: usize = 250;

/// cel-go's parser error when an expression nests deeper than [`MAX_RECURSION_DEPTH`].
pub fn recursion_limit_message() -> String {
    format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
}

/// The first limit `rule` (whose tree is `raw`) exceeds, as cel-go reports it.
pub fn check(rule: &str, raw: &IdedExpr, limit: usize) -> Option<Issue> {
    if rule_nesting(rule, limit).is_some_and(|d| d > limit) {
        let message = if limit == MAX_RECURSION_DEPTH {
            recursion_limit_message()
        } else {
            format!("expression recursion limit exceeded: {limit}")
        };
        return Some(Issue::new(Stage::Syntax, None, message));
    }
    (visit_depth(raw) > limit)
        .then(|| Issue::new(Stage::Syntax, None, "max recursion depth exceeded"))
}

/// The deepest nesting of any one grammar rule, stopping early once it exceeds `stop_above`;
/// `None` if the tokens are not a well-formed rule (the parser then reported an error anyway).
pub fn rule_nesting(rule: &str, stop_above: usize) -> Option<usize> {
    let tokens = lex(rule)?;
    let mut p = Replay {
        tokens: &tokens,
        pos: 0,
        depth: [0; RULES],
        max: 0,
        stop_above,
    };
    match p.start() {
        Ok(()) | Err(Stop::Exceeded) => Some(p.max),
        Err(Stop::Unexpected) => None,
    }
}

/// The deepest nesting of the expressions cel-go's visitor counts.
pub fn visit_depth(raw: &IdedExpr) -> usize {
    let mut max = 0;
    let mut stack = vec![(raw, 0usize)];
    while let Some((e, depth)) = stack.pop() {
        let depth = depth + usize::from(counts(&e.expr));
        max = max.max(depth);
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.target.iter().map(|t| (&**t, depth)));
                stack.extend(c.args.iter().map(|a| (a, depth)));
            }
            Expr::Select(s) => stack.push((&s.operand, depth)),
            Expr::List(l) => stack.extend(l.elements.iter().map(|x| (x, depth))),
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        stack.push((&me.key, depth));
                        stack.push((&me.value, depth));
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        stack.push((&f.value, depth));
                    }
                }
            }
            Expr::Comprehension(c) => stack.extend(
                [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .map(|x| (x, depth)),
            ),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    max
}

/// Whether cel-go's visitor counts this node: ternary, relation, arithmetic, select, member call
/// and index contexts.
fn counts(e: &Expr) -> bool {
    match e {
        Expr::Select(_) => true,
        Expr::Call(c) => {
            c.target.is_some()
                || matches!(
                    c.func_name.as_str(),
                    "_?_:_"
                        | "_==_"
                        | "_!=_"
                        | "_<_"
                        | "_<=_"
                        | "_>_"
                        | "_>=_"
                        | "@in"
                        | "_+_"
                        | "_-_"
                        | "_*_"
                        | "_/_"
                        | "_%_"
                        | "_[_]"
                )
        }
        _ => false,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Ident,
    EscIdent,
    /// Numbers, strings, bytes, `true`, `false`, `null`.
    Literal,
    Num,
    In,
    Punct(&'static str),
    Eof,
}

const PUNCT2: [&str; 6] = ["==", "!=", "<=", ">=", "&&", "||"];
const PUNCT1: [&str; 18] = [
    "<", ">", "!", "-", "+", "*", "/", "%", "?", ":", ".", ",", "[", "]", "{", "}", "(", ")",
];

/// The grammar's tokens, for text the `cel` crate's lexer already accepted.
fn lex(text: &str) -> Option<Vec<Tok>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0C => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'`' => {
                let end = b[i + 1..].iter().position(|&x| x == b'`')?;
                i += end + 2;
                out.push(Tok::EscIdent);
            }
            b'"' | b'\'' => {
                i = skip_string(b, i, false)?;
                out.push(Tok::Literal);
            }
            b'0'..=b'9' => {
                i = skip_number(b, i);
                out.push(Tok::Num);
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = skip_number(b, i);
                out.push(Tok::Num);
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                let prefix = matches!(word, "r" | "R" | "b" | "B" | "br" | "bR" | "Br" | "BR");
                if prefix && matches!(b.get(i), Some(b'"' | b'\'')) {
                    i = skip_string(b, i, word.contains(['r', 'R']))?;
                    out.push(Tok::Literal);
                    continue;
                }
                out.push(match word {
                    "true" | "false" | "null" => Tok::Literal,
                    "in" => Tok::In,
                    _ => Tok::Ident,
                });
            }
            _ => {
                let two = text.get(i..i + 2);
                if let Some(p) = PUNCT2.iter().find(|p| Some(**p) == two) {
                    out.push(Tok::Punct(p));
                    i += 2;
                } else if let Some(p) = PUNCT1.iter().find(|p| p.as_bytes()[0] == c) {
                    out.push(Tok::Punct(p));
                    i += 1;
                } else {
                    return None;
                }
            }
        }
    }
    out.push(Tok::Eof);
    Some(out)
}

/// The end of the string literal whose opening quote is at `i`.
fn skip_string(b: &[u8], i: usize, raw: bool) -> Option<usize> {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = i + if triple { 3 } else { 1 };
    // `''` is an empty string, not the start of a triple-quoted one.
    if !triple && b.get(i + 1) == Some(&q) {
        return Some(i + 2);
    }
    while j < b.len() {
        match b[j] {
            b'\\' if !raw => j += 2,
            x if x == q && (!triple || (b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q))) => {
                return Some(j + if triple { 3 } else { 1 });
            }
            _ => j += 1,
        }
    }
    None
}

/// The end of the number starting at `i` (`12`, `0x1F`, `3u`, `1.5e-3`, `.5`); `1.e5` is `1`.
fn skip_number(b: &[u8], i: usize) -> usize {
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    if b[i] == b'0'
        && b.get(i + 1) == Some(&b'x')
        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        return j + usize::from(matches!(b.get(j), Some(b'u' | b'U')));
    }
    let mut j = digits(i);
    let mut float = false;
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits(j + 1);
        float = true;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let k = j + 1 + usize::from(matches!(b.get(j + 1), Some(b'+' | b'-')));
        if b.get(k).is_some_and(u8::is_ascii_digit) {
            j = digits(k);
            float = true;
        }
    }
    if !float && matches!(b.get(j), Some(b'u' | b'U')) {
        j += 1;
    }
    j
}

#[derive(Clone, Copy)]
enum Rule {
    Start,
    Expr,
    Or,
    And,
    Relation,
    Calc,
    Unary,
    Member,
    Primary,
    ExprList,
    ListInit,
    FieldInits,
    OptField,
    MapInits,
    EscapeIdent,
    OptExpr,
    Literal,
}
const RULES: usize = 17;

enum Stop {
    Exceeded,
    Unexpected,
}

/// Replays the parse of CEL.g4 over tokens, keeping cel-go's listener's per-rule counters.
struct Replay<'t> {
    tokens: &'t [Tok],
    pos: usize,
    depth: [usize; RULES],
    max: usize,
    stop_above: usize,
}

type Step = Result<(), Stop>;

impl Replay<'_> {
    fn peek(&self) -> Tok {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> Tok {
        self.tokens.get(self.pos + n).copied().unwrap_or(Tok::Eof)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if q == p)
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn expect(&mut self, p: &str) -> Step {
        if self.is(p) {
            self.bump();
            Ok(())
        } else {
            Err(Stop::Unexpected)
        }
    }

    fn enter(&mut self, r: Rule) -> Step {
        let d = &mut self.depth[r as usize];
        *d += 1;
        self.max = self.max.max(*d);
        if self.max > self.stop_above {
            return Err(Stop::Exceeded);
        }
        Ok(())
    }

    fn exit(&mut self, r: Rule) {
        self.depth[r as usize] -= 1;
    }

    fn start(&mut self) -> Step {
        self.enter(Rule::Start)?;
        self.expr()?;
        if self.peek() != Tok::Eof {
            return Err(Stop::Unexpected);
        }
        self.exit(Rule::Start);
        Ok(())
    }

    fn expr(&mut self) -> Step {
        self.enter(Rule::Expr)?;
        self.or()?;
        if self.is("?") {
            self.bump();
            self.or()?;
            self.expect(":")?;
            self.expr()?;
        }
        self.exit(Rule::Expr);
        Ok(())
    }

    fn or(&mut self) -> Step {
        self.enter(Rule::Or)?;
        self.and()?;
        while self.is("||") {
            self.bump();
            self.and()?;
        }
        self.exit(Rule::Or);
        Ok(())
    }

    fn and(&mut self) -> Step {
        self.enter(Rule::And)?;
        self.relation(0)?;
        while self.is("&&") {
            self.bump();
            self.relation(0)?;
        }
        self.exit(Rule::And);
        Ok(())
    }

    /// `relation: calc | relation op relation`, as ANTLR rewrites left recursion: a loop whose
    /// right operands are nested `relation[2]` invocations. Each turn of the loop exits and
    /// re-enters the rule, so chains do not nest.
    fn relation(&mut self, prec: u8) -> Step {
        self.enter(Rule::Relation)?;
        self.calc(0)?;
        loop {
            let relop = self.peek() == Tok::In
                || ["<", "<=", ">=", ">", "==", "!="]
                    .iter()
                    .any(|p| self.is(p));
            if !(relop && prec <= 1) {
                break;
            }
            self.exit(Rule::Relation);
            self.enter(Rule::Relation)?;
            self.bump();
            self.relation(2)?;
        }
        self.exit(Rule::Relation);
        Ok(())
    }

    /// `calc: unary | calc ('*'|'/'|'%') calc | calc ('+'|'-') calc`, multiplication binding
    /// tighter.
    fn calc(&mut self, prec: u8) -> Step {
        self.enter(Rule::Calc)?;
        self.unary()?;
        loop {
            let next = if ["*", "/", "%"].iter().any(|p| self.is(p)) && prec <= 2 {
                3
            } else if (self.is("+") || self.is("-")) && prec <= 1 {
                2
            } else {
                break;
            };
            self.exit(Rule::Calc);
            self.enter(Rule::Calc)?;
            self.bump();
            self.calc(next)?;
        }
        self.exit(Rule::Calc);
        Ok(())
    }

    fn unary(&mut self) -> Step {
        self.enter(Rule::Unary)?;
        if self.is("!") {
            while self.is("!") {
                self.bump();
            }
        } else {
            // The `-` right before a number is the literal's sign (cel-go reads `-1` as a
            // literal); either reading nests the rules alike.
            while self.is("-") && self.peek_at(1) != Tok::Num {
                self.bump();
            }
        }
        self.member()?;
        self.exit(Rule::Unary);
        Ok(())
    }

    fn member(&mut self) -> Step {
        self.enter(Rule::Member)?;
        self.primary()?;
        loop {
            if self.is(".") {
                self.exit(Rule::Member);
                self.enter(Rule::Member)?;
                self.bump();
                if self.is("?") {
                    self.bump();
                }
                if self.peek() == Tok::Ident && self.peek_at(1) == Tok::Punct("(") {
                    self.bump();
                    self.bump();
                    if !self.is(")") {
                        self.expr_list()?;
                    }
                    self.expect(")")?;
                } else {
                    self.escape_ident()?;
                }
            } else if self.is("[") {
                self.exit(Rule::Member);
                self.enter(Rule::Member)?;
                self.bump();
                if self.is("?") {
                    self.bump();
                }
                self.expr()?;
                self.expect("]")?;
            } else {
                break;
            }
        }
        self.exit(Rule::Member);
        Ok(())
    }

    fn primary(&mut self) -> Step {
        self.enter(Rule::Primary)?;
        let lead = usize::from(self.is("."));
        if self.peek_at(lead) == Tok::Ident {
            // `a.b.C{...}` is a message literal; `a.b` is an identifier and a selection.
            let mut n = lead + 1;
            while self.peek_at(n) == Tok::Punct(".") && self.peek_at(n + 1) == Tok::Ident {
                n += 2;
            }
            if self.peek_at(n) == Tok::Punct("{") {
                self.pos += n + 1;
                if self.peek() != Tok::Punct("}") && self.peek() != Tok::Punct(",") {
                    self.field_inits()?;
                }
                self.close(",", "}")?;
            } else {
                self.pos += lead + 1;
                if self.is("(") {
                    self.bump();
                    if !self.is(")") {
                        self.expr_list()?;
                    }
                    self.expect(")")?;
                }
            }
        } else if self.is("(") {
            self.bump();
            self.expr()?;
            self.expect(")")?;
        } else if self.is("[") {
            self.bump();
            if !self.is("]") && !self.is(",") {
                self.list_init()?;
            }
            self.close(",", "]")?;
        } else if self.is("{") {
            self.bump();
            if !self.is("}") && !self.is(",") {
                self.map_inits()?;
            }
            self.close(",", "}")?;
        } else {
            self.literal()?;
        }
        self.exit(Rule::Primary);
        Ok(())
    }

    /// An optional trailing `,` and the closing bracket.
    fn close(&mut self, comma: &str, end: &str) -> Step {
        if self.is(comma) {
            self.bump();
        }
        self.expect(end)
    }

    fn literal(&mut self) -> Step {
        self.enter(Rule::Literal)?;
        if self.is("-") {
            self.bump();
        }
        if !matches!(self.peek(), Tok::Literal | Tok::Num) {
            return Err(Stop::Unexpected);
        }
        self.bump();
        self.exit(Rule::Literal);
        Ok(())
    }

    fn expr_list(&mut self) -> Step {
        self.enter(Rule::ExprList)?;
        self.expr()?;
        while self.is(",") {
            self.bump();
            self.expr()?;
        }
        self.exit(Rule::ExprList);
        Ok(())
    }

    fn list_init(&mut self) -> Step {
        self.enter(Rule::ListInit)?;
        self.opt_expr()?;
        while self.is(",") && self.peek_at(1) != Tok::Punct("]") {
            self.bump();
            self.opt_expr()?;
        }
        self.exit(Rule::ListInit);
        Ok(())
    }

    fn opt_expr(&mut self) -> Step {
        self.enter(Rule::OptExpr)?;
        if self.is("?") {
            self.bump();
        }
        self.expr()?;
        self.exit(Rule::OptExpr);
        Ok(())
    }

    fn field_inits(&mut self) -> Step {
        self.enter(Rule::FieldInits)?;
        loop {
            self.enter(Rule::OptField)?;
            if self.is("?") {
                self.bump();
            }
            self.escape_ident()?;
            self.exit(Rule::OptField);
            self.expect(":")?;
            self.expr()?;
            if !(self.is(",") && self.peek_at(1) != Tok::Punct("}")) {
                break;
            }
            self.bump();
        }
        self.exit(Rule::FieldInits);
        Ok(())
    }

    fn map_inits(&mut self) -> Step {
        self.enter(Rule::MapInits)?;
        loop {
            self.opt_expr()?;
            self.expect(":")?;
            self.expr()?;
            if !(self.is(",") && self.peek_at(1) != Tok::Punct("}")) {
                break;
            }
            self.bump();
        }
        self.exit(Rule::MapInits);
        Ok(())
    }

    fn escape_ident(&mut self) -> Step {
        self.enter(Rule::EscapeIdent)?;
        if !matches!(self.peek(), Tok::Ident | Tok::EscIdent) {
            return Err(Stop::Unexpected);
        }
        self.bump();
        self.exit(Rule::EscapeIdent);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parens(inner: &str, n: usize) -> String {
        format!("{}{inner}{}", "(".repeat(n), ")".repeat(n))
    }

    /// The smallest limit `rule` passes, as cel-go's `MaxRecursionDepth` option sees it.
    fn required_depth(rule: &str) -> usize {
        promotion_findings::on_parser_stack(|| {
            let raw = super::super::parse::parse(rule)
                .unwrap_or_else(|e| panic!("{rule}: {e:?}"))
                .expr;
            let nesting = rule_nesting(rule, usize::MAX).expect("tokens replay");
            nesting.max(visit_depth(&raw))
        })
    }

    /// cel-go `parser_test.go`, `TestRecursionLimit` (depth 32): each source parses at exactly
    /// `antlrMinRecursionDepth` and fails one below.
    #[test]
    fn minimum_depths_match_cel_go_parser_tests() {
        let d = 32;
        let cases: Vec<(String, usize)> = vec![
            (format!("1{}", " + 1".repeat(d + 1)), d + 1),
            (parens("7", d), d + 1),
            (
                format!("{} + {}", parens("7", d), parens("7", d - 1)),
                d + 1,
            ),
            (format!("a{}", ".f".repeat(d + 1)), d + 1),
            (format!("a{}", "[1]".repeat(d + 1)), d + 1),
            (format!("a{}", " < 1".repeat(d + 1)), d + 1),
            (
                format!(
                    "a{}{}",
                    "[1]".repeat(20),
                    format!(" != a{}", "[1]".repeat(20)).repeat(13)
                ),
                d + 1,
            ),
            (format!("{}c", "a ? b : ".repeat(d + 1)), d + 2),
            (format!("a ? {} : c", parens("b", d)), d + 1),
            (format!("{}7{}", "(".repeat(d), ") + 1".repeat(d)), d + 1),
            (
                format!("(true) || {}false{}", "(true || ".repeat(d), ")".repeat(d)),
                d + 1,
            ),
            ("((1 + ((7))))".into(), 6),
            ("(((1 + 2 + 3 + 4 + (5 + 6))))".into(), 7),
            ("(1 + 1 + 1) + 1 + 1 + 1".into(), 5),
            ("((1 + 1) + 1) + 1 + 1 + 1".into(), 5),
            ("(((1 + 1 + 1))) + 1 + 1 + 1".into(), 5),
            ("1 + (1 + 1 + 1 + 1 + 1)".into(), 5),
            ("(a.b.c).d.e.f".into(), 5),
            ("f(a.b.c.d).e".into(), 4),
            ("x + f(a.b.c.d) + y".into(), 5),
            ("x + f(a + b + c + d) + y".into(), 5),
            ("x + a[b.c.d.e] + y".into(), 6),
            ("x + a.f(b.c.d.e) + y".into(), 6),
            ("x + Msg{f: a.b.c.d} + y".into(), 5),
            ("x + f(a.b.c.d, 1) + y".into(), 5),
            ("x + a.f(b.c.d.e, 1) + y".into(), 6),
            ("x + [a.b.c.d, 1][0] + y".into(), 6),
            ("x + {'k': a.b.c.d, 'j': 1}['k'] + y".into(), 6),
            ("x + {a.b.c.d.e: 1, 'j': 2}['j'] + y".into(), 7),
            ("x + Msg{f: a.b.c.d, g: 1} + y".into(), 5),
            ("x + [[a.b.c.d, 1], 1][0] + y".into(), 6),
            ("((a && b.c.d).e)".into(), 3),
            ("((a && b && c.d.e).f)".into(), 3),
            ("a.b.c.d.e + f.g".into(), 5),
            ("-a.b / c.d - e.f".into(), 3),
            ("(1 + 1 + 1 + 1 + 1)".into(), 4),
            ("[a.b.c.d.e]".into(), 4),
            ("{1: {2: {3: a.b.c}}}".into(), 4),
            (format!("a{}.Msg{{f: x}}", ".b".repeat(d + 1)), 2),
            (format!("a{}.Msg{{f: x.y.z}}.g", ".b".repeat(d + 1)), 3),
            ("x + a.b.c.d.e".into(), 5),
            ("a.b.c.d ? x : y".into(), 4),
            ("(a ? b : c) + 1 + 1 + 1".into(), 4),
            ("(-a.b / c.d - e.f || x)".into(), 3),
        ];
        for (rule, want) in cases {
            assert_eq!(required_depth(&rule), want, "{rule}");
        }
    }

    fn failure(rule: &str, limit: usize) -> Option<String> {
        promotion_findings::on_parser_stack(|| {
            let raw = super::super::parse::parse(rule).expect("parses").expr;
            check(rule, &raw, limit).map(|i| i.message)
        })
    }

    /// cel-go `parser_test.go` error cases at `MaxRecursionDepth(32)`: which limit trips.
    #[test]
    fn the_limit_that_trips_matches_cel_go() {
        let listener = Some("expression recursion limit exceeded: 32".to_string());
        let visitor = Some("max recursion depth exceeded".to_string());
        assert_eq!(
            failure(
                &format!("{}'not fine'{}", "[".repeat(32), "]".repeat(32)),
                32
            ),
            listener
        );
        assert_eq!(
            failure(&format!("{}c", "a ? b : ".repeat(40)), 32),
            listener
        );
        let sum = (1..=34)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" + ");
        assert_eq!(failure(&sum, 32), visitor);
        assert_eq!(
            failure(
                "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G.H",
                32
            ),
            visitor
        );
        let index = (1..=33).map(|i| format!("[{i}]")).collect::<String>();
        assert_eq!(failure(&format!("a{index}"), 32), visitor);
        let relations = (1..=33).map(|i| format!(" < {i}")).collect::<String>();
        assert_eq!(failure(&format!("a{relations}"), 32), visitor);
        assert_eq!(failure(&format!("a{}", ".f".repeat(32)), 32), None);
    }

    /// lint-parity.md E8, at cel-go's default limit of 250.
    #[test]
    fn default_limits_match_lint_parity() {
        let limit = MAX_RECURSION_DEPTH;
        assert_eq!(failure(&parens("true", 96), limit), None);
        assert_eq!(
            failure(
                &format!("{}1{} == []", "[".repeat(96), "]".repeat(96)),
                limit
            ),
            None
        );
        assert_eq!(
            failure(&format!("resource{} == 1", ".x".repeat(249)), limit),
            None
        );
        assert_eq!(
            failure(&format!("resource{} == 1", ".x".repeat(250)), limit).as_deref(),
            Some("max recursion depth exceeded")
        );
        assert_eq!(
            failure(&format!("{} > 0", vec!["1"; 251].join(" + ")), limit).as_deref(),
            Some("max recursion depth exceeded")
        );
        assert_eq!(
            failure(&format!("{} > 0", vec!["1"; 250].join(" + ")), limit),
            None
        );
        assert_eq!(failure(&parens("true", 249), limit), None);
        assert_eq!(
            failure(&parens("true", 250), limit).as_deref(),
            Some("expression recursion limit exceeded: 250")
        );
    }

    #[test]
    fn lexes_every_token_shape() {
        for rule in [
            "r'raw' + R\"raw\" + '''multi\nline''' + \"\"\"x\"\"\" + b'\\x00' + br'x' + ''",
            "0x1F + 0x1Fu + 1u + 1.5e-3 + .5 + 1e5 + 1.e5 // trailing comment",
            "a.`b-c`.d[?0] && {?'k': 1} != null && !true && -1 < 2u",
        ] {
            assert!(lex(rule).is_some(), "{rule}");
        }
        assert_eq!(lex("1.e5").map(|t| t.len()), Some(4), "1 . e5 EOF");
        assert_eq!(lex("'a\\'b'").map(|t| t.len()), Some(2));
    }
}
