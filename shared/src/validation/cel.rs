//! CEL health rules, judged as libsveltos evaluates them: plain cel-go (no optional syntax, no
//! extension libraries), one declared variable `resource`, and a boolean result.

use std::collections::HashSet;

use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::parser::Parser;

use super::{FieldPath, Finding};

/// cel-go's own limit is 100k code points; health rules are one or two lines.
pub const MAX_RULE_BYTES: usize = 16 * 1024;
pub const VARIABLE: &str = "resource";

/// Identifiers CEL resolves without declarations: type names usable in `type(x) == int`.
const BUILTIN_IDENTS: [&str; 11] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

pub fn check_rule(rule: &str, path: &FieldPath, out: &mut Vec<Finding>) {
    // The AST walk and the AST's drop recurse as deep as the parse did.
    super::on_parser_stack(|| check_rule_inner(rule, path, out));
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
    let parsed = std::panic::catch_unwind(|| Parser::new().parse(rule));
    let expr = match parsed {
        Ok(Ok(expr)) => expr,
        Ok(Err(errors)) => {
            let first = errors.errors.first();
            let (line, col) = first
                .map(|e| (e.pos.0.max(1) as usize, e.pos.1.max(0) as usize + 1))
                .unwrap_or((1, 1));
            let msg = first
                .map(|e| e.msg.trim_start_matches("Syntax error: "))
                .unwrap_or("unparseable");
            let more = match errors.errors.len() {
                0 | 1 => String::new(),
                n => format!(" (and {} more after it)", n - 1),
            };
            out.push(
                Finding::error(
                    "cel-syntax",
                    path,
                    format!("CEL syntax error at line {line}, column {col}: {msg}{more}"),
                )
                .at(line, col),
            );
            return;
        }
        Err(_) => {
            out.push(Finding::error(
                "cel-syntax",
                path,
                "CEL rule could not be parsed (the parser gave up on this input)",
            ));
            return;
        }
    };
    let mut undeclared = Vec::new();
    free_identifiers(&expr, &mut Vec::new(), &mut undeclared);
    let mut seen = HashSet::new();
    for name in undeclared {
        if !seen.insert(name.clone()) {
            continue;
        }
        let hint = if name == "self" {
            " (Sveltos binds the object as `resource`, not `self`: write `resource.` instead)"
        } else {
            " (the only variable Sveltos declares is `resource`)"
        };
        out.push(Finding::error(
            "cel-undeclared",
            path,
            format!("undeclared reference to `{name}`{hint}"),
        ));
    }
    if let Some(what) = non_boolean_root(&expr) {
        out.push(Finding::error(
            "cel-not-boolean",
            path,
            format!("rule evaluates to {what}, not a bool; Sveltos requires a boolean result"),
        ));
    }
}

/// Identifiers that are neither `resource`, a type name, nor bound by an enclosing
/// comprehension (`c` in `list.filter(c, ...)`, and the macro's internal accumulator).
fn free_identifiers(expr: &IdedExpr, bound: &mut Vec<String>, out: &mut Vec<String>) {
    match &expr.expr {
        Expr::Ident(name) => {
            let known = name == VARIABLE
                || name.starts_with('@')
                || BUILTIN_IDENTS.contains(&name.as_str())
                || bound.iter().any(|b| b == name);
            if !known {
                out.push(name.clone());
            }
        }
        Expr::Select(s) => free_identifiers(&s.operand, bound, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                free_identifiers(t, bound, out);
            }
            for a in &c.args {
                free_identifiers(a, bound, out);
            }
        }
        Expr::List(l) => {
            for e in &l.elements {
                free_identifiers(e, bound, out);
            }
        }
        Expr::Map(m) => {
            for e in &m.entries {
                if let EntryExpr::MapEntry(me) = &e.expr {
                    free_identifiers(&me.key, bound, out);
                    free_identifiers(&me.value, bound, out);
                }
            }
        }
        Expr::Struct(s) => {
            for e in &s.entries {
                if let EntryExpr::StructField(f) = &e.expr {
                    free_identifiers(&f.value, bound, out);
                }
            }
        }
        Expr::Comprehension(c) => {
            free_identifiers(&c.iter_range, bound, out);
            free_identifiers(&c.accu_init, bound, out);
            let before = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2.clone());
            }
            bound.push(c.accu_var.clone());
            free_identifiers(&c.loop_cond, bound, out);
            free_identifiers(&c.loop_step, bound, out);
            free_identifiers(&c.result, bound, out);
            bound.truncate(before);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// What the root obviously evaluates to when it cannot be a bool; `None` when it may be.
fn non_boolean_root(expr: &IdedExpr) -> Option<&'static str> {
    match &expr.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => None,
        Expr::Literal(LiteralValue::String(_)) => Some("a string"),
        Expr::Literal(LiteralValue::Int(_) | LiteralValue::UInt(_)) => Some("an integer"),
        Expr::Literal(LiteralValue::Double(_)) => Some("a double"),
        Expr::Literal(LiteralValue::Bytes(_)) => Some("bytes"),
        Expr::Literal(LiteralValue::Null) => Some("null"),
        Expr::List(_) => Some("a list"),
        Expr::Map(_) => Some("a map"),
        Expr::Struct(_) => Some("a message"),
        Expr::Call(c) => match c.func_name.as_str() {
            operators::ADD
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO
            | operators::NEGATE => Some("an arithmetic result"),
            "size" | "int" | "uint" | "double" => Some("a number"),
            "string" => Some("a string"),
            "bytes" => Some("bytes"),
            "duration" => Some("a duration"),
            "timestamp" => Some("a timestamp"),
            operators::MAP | operators::FILTER if c.target.is_some() => Some("a list"),
            operators::CONDITIONAL if c.args.len() == 3 => {
                non_boolean_root(&c.args[1]).or_else(|| non_boolean_root(&c.args[2]))
            }
            _ => None,
        },
        // `map` and `filter` expand to comprehensions accumulating a list.
        Expr::Comprehension(c) if matches!(&c.accu_init.expr, Expr::List(_)) => Some("a list"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(rule: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        check_rule(rule, &FieldPath::root("rule"), &mut out);
        out
    }

    fn codes(rule: &str) -> Vec<&'static str> {
        check(rule).iter().map(|f| f.code).collect()
    }

    #[test]
    fn accepts_sveltos_rules() {
        for ok in [
            "resource.status.phase == \"Running\"",
            "has(resource.spec.replicas) && resource.spec.replicas > 0",
            "resource.status.succeeded >= 1 &&\nresource.status.conditions.filter(c, c.type == 'Complete' && c.status == 'True').size() == 1",
            "resource.status.conditions.exists(c, c.type == 'Ready')",
            "resource.spec.containers.all(c, c.image.startsWith('registry/'))",
            "type(resource.spec) == map",
            "true",
            "resource.metadata.name in ['a', 'b'] ? true : false",
        ] {
            assert!(check(ok).is_empty(), "{ok}: {:?}", check(ok));
        }
    }

    #[test]
    fn self_is_undeclared() {
        let f = check("self.status.succeeded >= 1");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "cel-undeclared");
        assert!(f[0].message.contains("`self`"));
        assert!(f[0].message.contains("resource"));
        assert_eq!(codes("has(self.spec)"), ["cel-undeclared"]);
        assert_eq!(codes("object.x == 1 && object.y == 2"), ["cel-undeclared"]);
    }

    #[test]
    fn comprehension_variables_do_not_leak() {
        assert_eq!(
            codes("resource.items.exists(c, c.ok) && c.ok"),
            ["cel-undeclared"]
        );
    }

    #[test]
    fn syntax_errors_carry_column() {
        let f = check("(resource.status.phase == \"Running\"");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "cel-syntax");
        assert!(f[0].inner.is_some());
        for bad in [
            "resource.status.phase == ",
            "'unterminated",
            "a ===",
            "filter(c, )",
            "resource.?status",
        ] {
            assert_eq!(codes(bad), ["cel-syntax"], "{bad}");
        }
        assert_eq!(codes(""), ["cel-syntax"]);
    }

    #[test]
    fn non_boolean_roots() {
        assert_eq!(codes("1 + 2"), ["cel-not-boolean"]);
        assert_eq!(codes("'healthy'"), ["cel-not-boolean"]);
        assert_eq!(codes("size(resource.items)"), ["cel-not-boolean"]);
        assert_eq!(codes("resource.items.filter(i, i.ok)"), ["cel-not-boolean"]);
        assert_eq!(codes("resource.ok ? 1 : 0"), ["cel-not-boolean"]);
        assert!(codes("resource.spec.enabled").is_empty());
    }

    #[test]
    fn adversarial_rules_are_findings() {
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(codes(&deep), ["cel-too-large"]);
        let deep_small = format!("{}1{}", "(".repeat(4_000), ")".repeat(4_000));
        assert_eq!(codes(&deep_small), ["cel-syntax"]);
        assert_eq!(codes(&"a".repeat(1 << 20)), ["cel-too-large"]);
    }
}
