//! Sveltos' contract for a health script, checked on the syntax tree of a script that compiles.
//!
//! `lua-no-evaluate`: Sveltos runs the chunk, then calls the *global* `evaluate`. A definition
//! counts when it is in the main chunk's code (not inside a function body), including inside
//! `do`/`if`/loop blocks; `function evaluate` while a top-level `local evaluate` is in scope
//! assigns that local, as in Lua.
//!
//! `lua-no-healthy`: Sveltos converts the table `evaluate` returns to JSON and decodes it into
//! `{Healthy bool "healthy"}`; Go matches field names case-insensitively, so `Healthy` counts
//! too. The warning says the result can never carry such a key, so it is only given when that
//! is certain from the tree:
//! - no table key anywhere in the script is written as `healthy` in any case (`x.healthy`,
//!   `{Healthy = …}`, `["HEALTHY"]`, `function t.healthy()`, `t:healthy()`);
//! - no key is computed (`t[k] = v`, `{[k] = v}` with `k` not a literal), and nothing that
//!   writes raw keys or runs code from strings is named (`rawset`, `load`, `setfenv`, …);
//! - every value `evaluate` can return is known: a literal, a table constructor, a function,
//!   a comparison or `not`, `and`/`or` of known values, or a variable that only ever holds
//!   such values and never escapes into a call, another table or a parameter. Anything from
//!   outside (a field of `obj`, a call's result, `...`) could carry `healthy`, so it is quiet.

use std::collections::{HashMap, HashSet};

use super::ast::{BinOp, Call, Expr, ExprKind, Function, Stmt, StmtKind, UnOp};

/// Where the global `evaluate` comes from.
pub enum Evaluate<'x> {
    /// Assigned these function bodies (and nothing else).
    Functions(Vec<&'x Function<'x>>),
    /// Assigned something whose value is not known here.
    Unknown,
    /// Only declared `local`, at this line and column.
    Local(i32, i32),
    Missing,
}

/// Finds the definitions of the global `evaluate` in the main chunk's code.
pub fn find_evaluate<'x>(chunk: &'x [Stmt<'x>]) -> Evaluate<'x> {
    let mut finder = Finder {
        scopes: vec![false],
        functions: Vec::new(),
        unknown: false,
        local: None,
    };
    finder.block(chunk);
    if finder.unknown {
        Evaluate::Unknown
    } else if !finder.functions.is_empty() {
        Evaluate::Functions(finder.functions)
    } else if let Some((line, column)) = finder.local {
        Evaluate::Local(line, column)
    } else {
        Evaluate::Missing
    }
}

const EVALUATE: &[u8] = b"evaluate";

struct Finder<'x> {
    /// Per open block: is a local `evaluate` declared in it?
    scopes: Vec<bool>,
    functions: Vec<&'x Function<'x>>,
    unknown: bool,
    local: Option<(i32, i32)>,
}

impl<'x> Finder<'x> {
    fn local_in_scope(&self) -> bool {
        self.scopes.iter().any(|s| *s)
    }

    fn nested(&mut self, body: &'x [Stmt<'x>], declares: bool) {
        self.scopes.push(declares);
        self.block(body);
        self.scopes.pop();
    }

    fn block(&mut self, stmts: &'x [Stmt<'x>]) {
        for s in stmts {
            match &s.kind {
                StmtKind::Local { names, .. } => {
                    if let Some(n) = names.iter().find(|n| *n.text == *EVALUATE) {
                        self.local.get_or_insert((n.line, n.column));
                        if let Some(scope) = self.scopes.last_mut() {
                            *scope = true;
                        }
                    }
                }
                StmtKind::FunctionDef { name, func } => {
                    let is_evaluate = name.method.is_none()
                        && matches!(&name.func, Some(Expr { kind: ExprKind::Ident(n), .. }) if **n == *EVALUATE);
                    if is_evaluate && !self.local_in_scope() {
                        self.functions.push(func);
                    }
                }
                StmtKind::Assign { lhs, rhs } => {
                    for (i, target) in lhs.iter().enumerate() {
                        let ExprKind::Ident(n) = &target.kind else {
                            continue;
                        };
                        if **n != *EVALUATE || self.local_in_scope() {
                            continue;
                        }
                        match rhs.get(i).map(|e| &e.kind) {
                            Some(ExprKind::Function(f)) => self.functions.push(f),
                            _ => self.unknown = true,
                        }
                    }
                }
                StmtKind::Do(body)
                | StmtKind::While { body, .. }
                | StmtKind::Repeat { body, .. } => self.nested(body, false),
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    self.nested(then, false);
                    self.nested(otherwise, false);
                }
                StmtKind::NumericFor { name, body, .. } => {
                    self.nested(body, *name.text == *EVALUATE)
                }
                StmtKind::GenericFor { names, body, .. } => {
                    let declares = names.iter().any(|n| *n.text == *EVALUATE);
                    self.nested(body, declares)
                }
                _ => {}
            }
        }
    }
}

/// Names that write keys behind the tree's back or run code built from strings.
const OPAQUE_FUNCTIONS: &[&[u8]] = &[
    b"rawset",
    b"load",
    b"loadstring",
    b"loadfile",
    b"dofile",
    b"require",
    b"module",
    b"setfenv",
    b"getfenv",
];
/// With metatables in play, operators can return tables.
const METATABLE_FUNCTIONS: &[&[u8]] = &[b"setmetatable", b"getmetatable", b"debug"];

/// What the script does with keys and values, gathered in one walk.
#[derive(Default)]
pub struct Facts<'x> {
    pub healthy_key: bool,
    pub sets_status: bool,
    computed_key: bool,
    opaque_functions: bool,
    metatables: bool,
    /// Every value stored in each variable.
    assigned: HashMap<&'x [u8], Vec<Source<'x>>>,
    /// Variables holding values from outside: parameters, loop variables, escaped tables.
    external: HashSet<&'x [u8]>,
}

#[derive(Clone, Copy)]
enum Source<'x> {
    /// A value without keys: `nil` for a target without a value, or a named function.
    Keyless,
    /// Values a call or `...` supplies to targets without a value of their own.
    Unknown,
    Alias(&'x [u8]),
    Value(&'x Expr<'x>),
}

fn is_literal(e: &Expr<'_>) -> bool {
    matches!(
        e.kind,
        ExprKind::String(_)
            | ExprKind::Number(_)
            | ExprKind::Nil
            | ExprKind::True
            | ExprKind::False
    )
}

fn is_multi(e: &Expr<'_>) -> bool {
    matches!(e.kind, ExprKind::Call(_) | ExprKind::Vararg { .. })
}

impl<'x> Facts<'x> {
    pub fn of(chunk: &'x [Stmt<'x>]) -> Self {
        let mut f = Facts::default();
        f.stmts(chunk);
        f
    }

    fn key(&mut self, key: &[u8]) {
        if key.eq_ignore_ascii_case(b"healthy") {
            self.healthy_key = true;
        }
    }

    fn store(&mut self, name: &'x [u8], source: Source<'x>) {
        self.assigned.entry(name).or_default().push(source);
    }

    /// Records what variable `name` receives as the `i`-th target of `values`.
    fn assign(&mut self, name: &'x [u8], values: &'x [Expr<'x>], i: usize) {
        match values.get(i) {
            Some(v) => self.store_sources(name, v),
            None if values.last().is_some_and(is_multi) => self.store(name, Source::Unknown),
            None => self.store(name, Source::Keyless),
        }
    }

    /// `a or b` may be either operand; anything else is one value.
    fn store_sources(&mut self, name: &'x [u8], v: &'x Expr<'x>) {
        match &v.kind {
            ExprKind::Ident(n) => self.store(name, Source::Alias(n)),
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                rhs,
            } => {
                self.store_sources(name, lhs);
                self.store_sources(name, rhs);
            }
            _ => self.store(name, Source::Value(v)),
        }
    }

    fn stmts(&mut self, stmts: &'x [Stmt<'x>]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn status_key(&mut self, key: &Expr<'_>) {
        if matches!(&key.kind, ExprKind::String(k) if k.eq_ignore_ascii_case(b"status")) {
            self.sets_status = true;
        }
    }

    fn stmt(&mut self, s: &'x Stmt<'x>) {
        match &s.kind {
            StmtKind::Assign { lhs, rhs } => {
                for (i, target) in lhs.iter().enumerate() {
                    let value = rhs.get(i);
                    match &target.kind {
                        ExprKind::Ident(n) => {
                            if let Some(v) = value {
                                self.expr(v, false);
                            }
                            self.assign(n, rhs, i);
                        }
                        ExprKind::Index { object, key } => {
                            self.expr(object, false);
                            self.index_key(key, true);
                            self.status_key(key);
                            // A value stored in a table escapes into it.
                            if let Some(v) = value {
                                self.expr(v, true);
                            }
                        }
                        _ => {}
                    }
                }
                for v in rhs.iter().skip(lhs.len()) {
                    self.expr(v, false);
                }
            }
            StmtKind::Local { names, exprs } => {
                for e in exprs {
                    self.expr(e, false);
                }
                for (i, n) in names.iter().enumerate() {
                    self.assign(&n.text, exprs, i);
                }
            }
            StmtKind::Call(e) => self.expr(e, false),
            StmtKind::Do(body) => self.stmts(body),
            StmtKind::While { cond, body } | StmtKind::Repeat { cond, body } => {
                self.expr(cond, false);
                self.stmts(body);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond, false);
                self.stmts(then);
                self.stmts(otherwise);
            }
            StmtKind::NumericFor {
                name,
                init,
                limit,
                step,
                body,
            } => {
                self.external.insert(&name.text);
                for e in [Some(init), Some(limit), step.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    self.expr(e, false);
                }
                self.stmts(body);
            }
            StmtKind::GenericFor { names, exprs, body } => {
                for n in names {
                    self.external.insert(&n.text);
                }
                // The iterator functions receive these values.
                for e in exprs {
                    self.expr(e, true);
                }
                self.stmts(body);
            }
            StmtKind::FunctionDef { name, func } => {
                if let Some(method) = &name.method {
                    self.key(method);
                }
                match (&name.func, &name.receiver) {
                    (
                        Some(Expr {
                            kind: ExprKind::Ident(n),
                            ..
                        }),
                        None,
                    ) => self.store(n, Source::Keyless),
                    (Some(chain), _) | (None, Some(chain)) => self.expr(chain, false),
                    (None, None) => {}
                }
                self.function(func);
            }
            StmtKind::Return(values) => {
                for v in values {
                    self.expr(v, false);
                }
            }
            StmtKind::Break | StmtKind::Label(_) | StmtKind::Goto(_) => {}
        }
    }

    fn function(&mut self, func: &'x Function<'x>) {
        for p in &func.params {
            self.external.insert(&p.text);
        }
        self.stmts(&func.body);
    }

    fn index_key(&mut self, key: &'x Expr<'x>, write: bool) {
        match &key.kind {
            ExprKind::String(k) => self.key(k),
            _ if is_literal(key) => {}
            _ => {
                if write {
                    self.computed_key = true;
                }
                self.expr(key, false);
            }
        }
    }

    /// Walks an expression; `escapes` when its value goes somewhere the tree cannot follow
    /// (a call, another table).
    fn expr(&mut self, e: &'x Expr<'x>, escapes: bool) {
        match &e.kind {
            ExprKind::Ident(n) => {
                if OPAQUE_FUNCTIONS.contains(&&**n) {
                    self.opaque_functions = true;
                }
                if METATABLE_FUNCTIONS.contains(&&**n) {
                    self.metatables = true;
                }
                if escapes {
                    self.external.insert(n);
                }
            }
            ExprKind::Index { object, key } => {
                self.expr(object, false);
                self.index_key(key, false);
            }
            ExprKind::Call(call) => self.call(call),
            ExprKind::Function(f) => self.function(f),
            ExprKind::Table(fields) => {
                for field in fields {
                    if let Some(key) = &field.key {
                        self.index_key(key, true);
                        self.status_key(key);
                    }
                    self.expr(&field.value, true);
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let through = matches!(op, BinOp::And | BinOp::Or) && escapes;
                self.expr(lhs, through);
                self.expr(rhs, through);
            }
            ExprKind::Unary { operand, .. } => self.expr(operand, false),
            ExprKind::Nil
            | ExprKind::True
            | ExprKind::False
            | ExprKind::Number(_)
            | ExprKind::String(_)
            | ExprKind::Vararg { .. } => {}
        }
    }

    fn call(&mut self, call: &'x Call<'x>) {
        if let Some(f) = &call.func {
            self.expr(f, true);
        }
        if let Some(r) = &call.receiver {
            self.expr(r, true);
        }
        if let Some(m) = &call.method {
            self.key(m);
        }
        for a in &call.args {
            self.expr(a, true);
        }
    }

    /// Whether `e` is a value whose keys are all visible in the tree; `variable` says it of
    /// a variable.
    fn known(&self, e: &Expr<'_>, variable: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        match &e.kind {
            ExprKind::Nil
            | ExprKind::True
            | ExprKind::False
            | ExprKind::Number(_)
            | ExprKind::String(_)
            | ExprKind::Function(_)
            | ExprKind::Table(_) => true,
            ExprKind::Ident(n) => variable(n),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinOp::And | BinOp::Or => self.known(lhs, variable) && self.known(rhs, variable),
                BinOp::Gt | BinOp::Lt | BinOp::Ge | BinOp::Le | BinOp::Eq | BinOp::Ne => true,
                // Operators on tables call metamethods, which may return anything.
                _ => !self.metatables,
            },
            ExprKind::Unary { op, .. } => *op == UnOp::Not || !self.metatables,
            ExprKind::Vararg { .. } | ExprKind::Index { .. } | ExprKind::Call(_) => false,
        }
    }

    /// Whether every variable that may share a table with `name` (through `a = b`) only ever
    /// holds known values and never escapes.
    fn variable_known(&self, name: &[u8], aliases: &HashMap<&[u8], Vec<&[u8]>>) -> bool {
        let mut group: Vec<&[u8]> = vec![name];
        let mut i = 0;
        while i < group.len() {
            for next in aliases.get(group[i]).into_iter().flatten() {
                if !group.contains(next) {
                    group.push(next);
                }
            }
            i += 1;
        }
        group.iter().all(|v| {
            !self.external.contains(v)
                // A variable never assigned here is a global from Sveltos (`obj`, a module).
                && self.assigned.get(v).is_some_and(|sources| {
                    sources.iter().all(|s| match s {
                        Source::Keyless | Source::Alias(_) => true,
                        Source::Unknown => false,
                        Source::Value(e) => self.known(e, &mut |_| false),
                    })
                })
        })
    }

    /// Whether the result can never carry `healthy` (the warning's condition).
    pub fn never_healthy(&self, evaluate: &[&'x Function<'x>]) -> bool {
        if self.healthy_key || self.computed_key || self.opaque_functions {
            return false;
        }
        let mut aliases: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
        for (var, sources) in &self.assigned {
            for s in sources {
                if let Source::Alias(other) = s {
                    aliases.entry(var).or_default().push(other);
                    aliases.entry(other).or_default().push(var);
                }
            }
        }
        let mut returns = Vec::new();
        for f in evaluate {
            collect_returns(&f.body, &mut returns);
        }
        returns.iter().all(|r| match r.first() {
            None => true,
            Some(e) => self.known(e, &mut |n| self.variable_known(n, &aliases)),
        })
    }
}

/// Return statements of a function body, not of functions nested in it.
fn collect_returns<'x>(stmts: &'x [Stmt<'x>], out: &mut Vec<&'x [Expr<'x>]>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Return(values) => out.push(values),
            StmtKind::Do(body)
            | StmtKind::While { body, .. }
            | StmtKind::Repeat { body, .. }
            | StmtKind::NumericFor { body, .. }
            | StmtKind::GenericFor { body, .. } => collect_returns(body, out),
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_returns(then, out);
                collect_returns(otherwise, out);
            }
            _ => {}
        }
    }
}
