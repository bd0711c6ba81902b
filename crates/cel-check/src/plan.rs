//! What makes cel-go's `env.Program` fail on a checked expression: an index whose key is a
//! literal turns into a constant attribute qualifier at planning time
//! (`interpreter/attributes.go`, `newQualifier`), and qualifiers exist only for strings, ints,
//! uints, bools and doubles. So `{null: false}[null]` type-checks and then cannot be planned.

use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::IdedExpr;

use super::issue::{Issue, Stage};

/// The planning error cel-go reports first (it plans operands before the call using them).
pub fn check(e: &IdedExpr) -> Option<Issue> {
    match &e.expr {
        Expr::Call(c) => {
            let nested = c.target.iter().map(|t| &**t).chain(&c.args).find_map(check);
            if nested.is_some() {
                return nested;
            }
            if c.func_name != "_[_]" || c.args.len() != 2 {
                return None;
            }
            let go_type = match &c.args[1].expr {
                Expr::Literal(LiteralValue::Null) => "types.Null",
                Expr::Literal(LiteralValue::Bytes(_)) => "types.Bytes",
                _ => return None,
            };
            Some(Issue::new(
                Stage::Plan,
                None,
                format!("invalid qualifier type: {go_type}"),
            ))
        }
        Expr::Select(s) => check(&s.operand),
        Expr::List(l) => l.elements.iter().find_map(check),
        Expr::Map(m) => m.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(me) => check(&me.key).or_else(|| check(&me.value)),
            EntryExpr::StructField(_) => None,
        }),
        Expr::Struct(s) => s.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::StructField(f) => check(&f.value),
            EntryExpr::MapEntry(_) => None,
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(check),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => None,
    }
}
