//! The macros of cel-go's default environment, expanded as `parser/macro.go` does: `has`, and
//! the receiver macros `all`, `exists`, `exists_one`, `map` (with two or three arguments) and
//! `filter`. Not `existsOne` (cel-go declares it, but `cel.NewEnv` does not enable it), not
//! `cel.bind`, no two-variable comprehensions.
//!
//! The accumulator is `@result`, which source text cannot name; `__result__`, the old name, is
//! refused as an iteration variable all the same.

use cel::common::ast::SourceInfo;
use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, ListExpr, LiteralValue, SelectExpr,
};
use cel::IdedExpr;

use super::issue::{Issue, Positions, Stage};

const ACCUMULATOR: &str = "@result";
const LEGACY_ACCUMULATOR: &str = "__result__";
/// Ids for expanded nodes, above any id the parser hands out for a size-capped rule.
pub const FIRST_MACRO_ID: u64 = 1 << 32;

pub struct Expansion {
    pub expr: IdedExpr,
    pub issues: Vec<Issue>,
}

/// Expands every macro call in `expr`, innermost first, registering the new nodes' positions
/// (the macro call's) in `info`.
pub fn expand(source: &str, expr: IdedExpr, info: &mut SourceInfo) -> Expansion {
    let mut x = Expander {
        source,
        info,
        next_id: FIRST_MACRO_ID,
        issues: Vec::new(),
    };
    let expr = x.expand(expr);
    Expansion {
        expr,
        issues: x.issues,
    }
}

struct Expander<'a> {
    source: &'a str,
    info: &'a mut SourceInfo,
    next_id: u64,
    issues: Vec<Issue>,
}

impl Expander<'_> {
    fn expand(&mut self, e: IdedExpr) -> IdedExpr {
        let id = e.id;
        let expr = match e.expr {
            Expr::Call(c) => {
                // cel-go visits the target, then the arguments, then expands the call.
                let target = c.target.map(|t| self.expand(*t));
                let args = c.args.into_iter().map(|a| self.expand(a)).collect();
                return self.call(id, c.func_name, target, args);
            }
            Expr::Select(s) => Expr::Select(SelectExpr {
                operand: Box::new(self.expand(*s.operand)),
                ..s
            }),
            Expr::List(l) => Expr::List(ListExpr {
                elements: l.elements.into_iter().map(|x| self.expand(x)).collect(),
                ..l
            }),
            Expr::Map(mut m) => {
                for entry in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut entry.expr {
                        me.key = self.expand(std::mem::take(&mut me.key));
                        me.value = self.expand(std::mem::take(&mut me.value));
                    }
                }
                Expr::Map(m)
            }
            Expr::Struct(mut s) => {
                for entry in &mut s.entries {
                    if let EntryExpr::StructField(f) = &mut entry.expr {
                        f.value = self.expand(std::mem::take(&mut f.value));
                    }
                }
                Expr::Struct(s)
            }
            other => other,
        };
        IdedExpr { id, expr }
    }

    fn call(
        &mut self,
        id: u64,
        function: String,
        target: Option<IdedExpr>,
        args: Vec<IdedExpr>,
    ) -> IdedExpr {
        let expanded = match (function.as_str(), &target, args.len()) {
            ("has", None, 1) => self.has(id, args),
            ("all" | "exists" | "exists_one", Some(_), 2)
            | ("map", Some(_), 2 | 3)
            | ("filter", Some(_), 2) => {
                let target = target.expect("matched Some");
                self.comprehension(id, &function, target, args)
            }
            _ => {
                return IdedExpr {
                    id,
                    expr: Expr::Call(CallExpr {
                        func_name: function,
                        target: target.map(Box::new),
                        args,
                    }),
                }
            }
        };
        expanded.unwrap_or_else(|issue| {
            self.issues.push(issue);
            IdedExpr {
                id,
                expr: Expr::Unspecified,
            }
        })
    }

    /// A node placed where the macro call `call` is, as cel-go's `nextMacroID`.
    fn node(&mut self, call: u64, expr: Expr) -> IdedExpr {
        let id = self.next_id;
        self.next_id += 1;
        if let Some((start, stop)) = self.info.offset_for(call) {
            self.info.add_offset(id, start, stop);
        }
        IdedExpr { id, expr }
    }

    fn error(&self, at: &IdedExpr, message: &str) -> Issue {
        let at = Positions::new(self.source, self.info).of(at.id);
        Issue::new(Stage::Syntax, at, message)
    }

    fn has(&mut self, call: u64, mut args: Vec<IdedExpr>) -> Result<IdedExpr, Issue> {
        let arg = args.remove(0);
        match arg.expr {
            Expr::Select(s) => Ok(self.node(
                call,
                Expr::Select(SelectExpr {
                    operand: s.operand,
                    field: s.field,
                    test: true,
                }),
            )),
            expr => Err(self.error(
                &IdedExpr { id: arg.id, expr },
                "invalid argument to has() macro",
            )),
        }
    }

    fn comprehension(
        &mut self,
        call: u64,
        function: &str,
        target: IdedExpr,
        mut args: Vec<IdedExpr>,
    ) -> Result<IdedExpr, Issue> {
        let var = match &args[0].expr {
            Expr::Ident(name) => name.clone(),
            _ => {
                let message = match function {
                    "map" | "filter" => "argument is not an identifier",
                    _ => "argument must be a simple name",
                };
                return Err(self.error(&args[0], message));
            }
        };
        if var == ACCUMULATOR || var == LEGACY_ACCUMULATOR {
            return Err(self.error(
                &args[0],
                "iteration variable overwrites accumulator variable",
            ));
        }
        let accu = |x: &mut Self| x.node(call, Expr::Ident(ACCUMULATOR.to_string()));
        let lit = |x: &mut Self, v: LiteralValue| x.node(call, Expr::Literal(v));
        let call_of = |x: &mut Self, f: &str, args: Vec<IdedExpr>| {
            x.node(
                call,
                Expr::Call(CallExpr {
                    func_name: f.to_string(),
                    target: None,
                    args,
                }),
            )
        };
        let (init, condition, step, result) = match function {
            "all" | "exists" => {
                let all = function == "all";
                let init = lit(self, LiteralValue::Boolean((all).into()));
                let a = accu(self);
                let cond_arg = if all {
                    a
                } else {
                    call_of(self, operators::LOGICAL_NOT, vec![a])
                };
                let condition = call_of(self, operators::NOT_STRICTLY_FALSE, vec![cond_arg]);
                let a = accu(self);
                let op = if all {
                    operators::LOGICAL_AND
                } else {
                    operators::LOGICAL_OR
                };
                let step = call_of(self, op, vec![a, args.remove(1)]);
                (init, condition, step, accu(self))
            }
            "exists_one" => {
                let init = lit(self, LiteralValue::Int(0.into()));
                let condition = lit(self, LiteralValue::Boolean(true.into()));
                let (a, one) = (accu(self), lit(self, LiteralValue::Int(1.into())));
                let plus = call_of(self, operators::ADD, vec![a, one]);
                let a = accu(self);
                let step = call_of(self, operators::CONDITIONAL, vec![args.remove(1), plus, a]);
                let (a, one) = (accu(self), lit(self, LiteralValue::Int(1.into())));
                (
                    init,
                    condition,
                    step,
                    call_of(self, operators::EQUALS, vec![a, one]),
                )
            }
            _ => {
                // map(v, f), map(v, p, f) and filter(v, p) accumulate a list.
                let init = self.node(call, Expr::List(ListExpr::new(Vec::new())));
                let condition = lit(self, LiteralValue::Boolean(true.into()));
                let (element, filter) = match (function, args.len()) {
                    ("filter", _) => {
                        let predicate = args.remove(1);
                        (args.remove(0), Some(predicate))
                    }
                    (_, 3) => {
                        let element = args.remove(2);
                        (element, Some(args.remove(1)))
                    }
                    _ => (args.remove(1), None),
                };
                let a = accu(self);
                let item = self.node(call, Expr::List(ListExpr::new(vec![element])));
                let mut step = call_of(self, operators::ADD, vec![a, item]);
                if let Some(filter) = filter {
                    let a = accu(self);
                    step = call_of(self, operators::CONDITIONAL, vec![filter, step, a]);
                }
                (init, condition, step, accu(self))
            }
        };
        Ok(self.node(
            call,
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: target,
                iter_var: var,
                iter_var2: None,
                accu_var: ACCUMULATOR.to_string(),
                accu_init: init,
                loop_cond: condition,
                loop_step: step,
                result,
            })),
        ))
    }
}
