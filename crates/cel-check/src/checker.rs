//! A port of cel-go's type checker (`checker/checker.go`) for the default environment with the
//! one variable Sveltos declares, `resource` of type `dyn`.
//!
//! Kept as cel-go does it, because verdicts depend on it: arguments are checked before the
//! receiver; every candidate overload with type parameters takes fresh type variables (their
//! names appear in messages); mixed-type list and map literals become `dyn`; and the checker
//! environment of a comprehension's scope forgets that cross-type numeric comparisons are
//! disabled, so from the first comprehension on `1 < 1.5` type-checks.

use std::collections::HashMap;

use cel::common::ast::SourceInfo;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, ListExpr, LiteralValue, MapExpr, SelectExpr,
    StructExpr,
};
use cel::IdedExpr;

use super::issue::{Issue, Positions, Stage};
use super::macros::FIRST_MACRO_ID;
use super::stdlib::{self, Function, Stdlib};
use super::types::{
    is_assignable, is_assignable_list, is_dyn, is_dyn_or_error, is_exact, most_general, substitute,
    write_signature, Kind, Mapping, Prim, Type, BOOL, BYTES, DOUBLE, INT, STRING, UINT,
};

pub struct Checked {
    pub issues: Vec<Issue>,
    /// The rule's type, bound type parameters substituted and free ones `dyn`.
    pub output: Type,
    /// For a `dyn` rule whose value cannot be a bool: the function computing it and the result
    /// types of its matching overloads.
    pub never_bool: Option<(String, Vec<Type>)>,
}

pub fn check(source: &str, expr: &IdedExpr, info: &SourceInfo) -> Checked {
    let mut c = Checker {
        lib: Stdlib::get(),
        positions: Positions::new(source, info),
        types: TypeTable::default(),
        mappings: Mapping::default(),
        next_var: 0,
        locals: Vec::new(),
        cross_type_disabled: true,
        issues: Vec::new(),
        never_bool: HashMap::new(),
    };
    c.check(expr);
    let output = substitute(&c.mappings, &c.type_of(expr.id), true);
    let never_bool = match output {
        Type::Dyn => c.never_bool_of(expr),
        _ => None,
    };
    Checked {
        issues: c.issues,
        output,
        never_bool,
    }
}

struct Checker<'a> {
    lib: &'static Stdlib,
    positions: Positions<'a>,
    types: TypeTable,
    mappings: Mapping,
    next_var: usize,
    /// Comprehension variables, innermost last.
    locals: Vec<(String, Type)>,
    cross_type_disabled: bool,
    issues: Vec<Issue>,
    /// Calls all of whose matching overloads return a type that is never a bool.
    never_bool: HashMap<u64, (String, Vec<Type>)>,
}

impl Checker<'_> {
    fn check(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Literal(l) => {
                let t = match l {
                    LiteralValue::Boolean(_) => BOOL,
                    LiteralValue::Bytes(_) => BYTES,
                    LiteralValue::Double(_) => DOUBLE,
                    LiteralValue::Int(_) => INT,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => STRING,
                    LiteralValue::UInt(_) => UINT,
                };
                self.set_type(e.id, t);
            }
            Expr::Ident(name) => self.check_ident(e.id, name),
            Expr::Select(s) => self.check_select(e, s),
            Expr::Call(c) => self.check_call(e.id, c),
            Expr::List(l) => self.check_list(e.id, l),
            Expr::Map(m) => self.check_map(e.id, m),
            Expr::Struct(s) => self.check_struct(e.id, s),
            Expr::Comprehension(c) => self.check_comprehension(e.id, c),
            Expr::Unspecified => {
                self.report(
                    Stage::Type,
                    e.id,
                    "unexpected unspecified type: IdedExpr".into(),
                );
                self.set_type(e.id, Type::Error);
            }
        }
    }

    fn type_of(&self, id: u64) -> Type {
        self.types.get(id).cloned().unwrap_or(Type::Error)
    }

    fn set_type(&mut self, id: u64, t: Type) {
        self.types.set(id, t);
    }

    fn report(&mut self, stage: Stage, id: u64, message: String) {
        let at = self.positions.of(id);
        self.issues.push(Issue::new(stage, at, message));
    }

    fn undeclared(&mut self, id: u64, name: &str, function: bool) {
        let at = self.positions.of(id);
        let message = format!("undeclared reference to '{name}' (in container '')");
        let mut issue =
            Issue::new(Stage::Undeclared, at, message).with_hint(undeclared_hint(name, function));
        issue.name = Some(name.to_string());
        self.issues.push(issue);
    }

    fn type_mismatch(&mut self, id: u64, expected: &Type, actual: &Type) {
        self.report(
            Stage::Type,
            id,
            format!("expected type '{expected}' but found '{actual}'"),
        );
    }

    fn new_type_var(&mut self) -> Type {
        let v = Type::param(&format!("_var{}", self.next_var));
        self.next_var += 1;
        v
    }

    fn is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        is_assignable(&mut self.mappings, t1, t2)
    }

    /// cel-go's `Env.LookupIdent`: comprehension variables, then declared identifiers, then
    /// message types, then enum constants. A leading `.` names the root scope.
    fn lookup_ident(&self, name: &str) -> Option<(String, Type)> {
        let name = name.strip_prefix('.').unwrap_or(name);
        let found = self
            .locals
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .or_else(|| self.lib.ident(name).cloned())
            .or_else(|| stdlib::message_type(name).map(Type::type_of))
            .or_else(|| stdlib::enum_value(name))?;
        Some((name.to_string(), found))
    }

    fn lookup_function(&self, name: &str) -> Option<&'static Function> {
        self.lib.function(name.strip_prefix('.').unwrap_or(name))
    }

    fn check_ident(&mut self, id: u64, name: &str) {
        match self.lookup_ident(name) {
            Some((_, t)) => self.set_type(id, t),
            None => {
                self.set_type(id, Type::Error);
                self.undeclared(id, name, false);
            }
        }
    }

    fn check_select(&mut self, e: &IdedExpr, s: &SelectExpr) {
        // `a.b.c` may name a declaration (`google.protobuf.Duration`) before it selects fields.
        if let Some(found) = qualified_name(e).and_then(|q| self.lookup_ident(&q)) {
            self.set_type(e.id, found.1);
            return;
        }
        let result = self.check_select_field(e.id, &s.operand, &s.field);
        let result = if s.test { BOOL } else { result };
        let t = substitute(&self.mappings, &result, false);
        self.set_type(e.id, t);
    }

    fn check_select_field(&mut self, id: u64, operand: &IdedExpr, field: &str) -> Type {
        self.check(operand);
        let target = substitute(&self.mappings, &self.type_of(operand.id), false);
        match target.kind() {
            Kind::Map => target.params()[1].clone(),
            Kind::Struct => self
                .lookup_field_type(id, target.type_name(), field)
                .unwrap_or(Type::Error),
            Kind::TypeParam => {
                // Fixes the parameter to dyn so that it cannot later unify with something else.
                self.is_assignable(&Type::Dyn, &target);
                Type::Dyn
            }
            _ => {
                if !is_dyn_or_error(&target) {
                    self.report(
                        Stage::Type,
                        id,
                        format!("type '{target}' does not support field selection"),
                    );
                }
                Type::Dyn
            }
        }
    }

    fn lookup_field_type(&mut self, id: u64, message: &str, field: &str) -> Option<Type> {
        if stdlib::message_type(message).is_none() {
            self.report(
                Stage::Type,
                id,
                format!("unexpected failed resolution of '{message}'"),
            );
            return None;
        }
        let found = stdlib::field_type(message, field);
        if found.is_none() {
            self.report(Stage::Type, id, format!("undefined field '{field}'"));
        }
        found
    }

    fn check_call(&mut self, id: u64, c: &CallExpr) {
        for arg in &c.args {
            self.check(arg);
        }
        // A receiver that spells a name (`a.b.f()`) could make `a.b.f` a namespaced function;
        // the default environment declares none, so every receiver is a value.
        if let Some(target) = &c.target {
            self.check(target);
        }
        let Some(f) = self.lookup_function(&c.func_name) else {
            self.set_type(id, Type::Error);
            self.undeclared(id, &c.func_name, true);
            return;
        };
        let t = self
            .resolve_overload(id, f, c.target.as_deref(), &c.args)
            .unwrap_or(Type::Error);
        self.set_type(id, t);
    }

    fn resolve_overload(
        &mut self,
        call: u64,
        f: &'static Function,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> Option<Type> {
        let arg_types: Vec<Type> = target
            .into_iter()
            .chain(args)
            .map(|a| self.type_of(a.id))
            .collect();
        let mut result: Option<Type> = None;
        let mut declared_results = Vec::new();
        for o in &f.overloads {
            if (self.cross_type_disabled && o.cross_type) || o.member != target.is_some() {
                continue;
            }
            if f.name == "_&&_" || f.name == "_||_" {
                let mut ok = true;
                for (a, t) in args.iter().zip(&arg_types) {
                    if !self.is_assignable(t, &BOOL) {
                        self.type_mismatch(a.id, &BOOL, t);
                        ok = false;
                    }
                }
                return ok.then_some(BOOL);
            }
            let fresh: Vec<Type>;
            let (params, declared) = if o.type_params.is_empty() {
                (o.args.as_slice(), &o.result)
            } else {
                let mut vars = Mapping::default();
                for p in &o.type_params {
                    let v = self.new_type_var();
                    vars.add(&Type::Param(p.clone()), v);
                }
                fresh = std::iter::once(&o.result)
                    .chain(&o.args)
                    .map(|t| substitute(&vars, t, false))
                    .collect();
                (&fresh[1..], &fresh[0])
            };
            if !is_assignable_list(&mut self.mappings, &arg_types, params) {
                continue;
            }
            declared_results.push(o.result.clone());
            let fn_result = substitute(&self.mappings, declared, false);
            result = Some(match result {
                None => fn_result,
                Some(r) if !is_dyn(&r) && !is_exact(&fn_result, &r) => Type::Dyn,
                Some(r) => r,
            });
        }
        let Some(result) = result else {
            let shown: Vec<Type> = arg_types
                .iter()
                .map(|t| substitute(&self.mappings, t, true))
                .collect();
            let mut signature = String::new();
            // Writing to a String cannot fail.
            let _ = match target {
                Some(_) => write_signature(&mut signature, shown.first(), &shown[1..]),
                None => write_signature(&mut signature, None, &shown),
            };
            self.report(
                Stage::Type,
                call,
                format!(
                    "found no matching overload for '{}' applied to '{signature}'",
                    f.name
                ),
            );
            return None;
        };
        if declared_results.iter().all(never_bool) {
            let mut shown: Vec<Type> = Vec::new();
            for t in declared_results {
                let t = substitute(&Mapping::default(), &t, true);
                if !shown.iter().any(|s| is_exact(s, &t)) {
                    shown.push(t);
                }
            }
            self.never_bool.insert(call, (f.name.to_string(), shown));
        }
        Some(result)
    }

    fn check_list(&mut self, id: u64, l: &ListExpr) {
        let mut elems: Option<Type> = None;
        for e in &l.elements {
            self.check(e);
            let t = self.type_of(e.id);
            elems = Some(self.join_types(elems, t));
        }
        let elem = match elems {
            Some(t) => t,
            None => self.new_type_var(),
        };
        self.set_type(id, Type::list(elem));
    }

    fn check_map(&mut self, id: u64, m: &MapExpr) {
        let (mut keys, mut values): (Option<Type>, Option<Type>) = (None, None);
        for entry in &m.entries {
            let EntryExpr::MapEntry(me) = &entry.expr else {
                continue;
            };
            self.check(&me.key);
            let t = self.type_of(me.key.id);
            keys = Some(self.join_types(keys, t));
            self.check(&me.value);
            let t = self.type_of(me.value.id);
            values = Some(self.join_types(values, t));
        }
        let (key, value) = match (keys, values) {
            (Some(k), Some(v)) => (k, v),
            _ => (self.new_type_var(), self.new_type_var()),
        };
        self.set_type(id, Type::map(key, value));
    }

    /// The element type of a literal so far and the next element's: mixed types give `dyn`.
    fn join_types(&mut self, previous: Option<Type>, current: Type) -> Type {
        match previous {
            None => current,
            Some(p) if self.is_assignable(&p, &current) => most_general(&p, &current),
            Some(_) => Type::Dyn,
        }
    }

    fn check_struct(&mut self, id: u64, s: &StructExpr) {
        let Some((mut name, ident)) = self.lookup_ident(&s.type_name) else {
            self.undeclared(id, &s.type_name, false);
            self.set_type(id, Type::Error);
            return;
        };
        let mut result = Type::Error;
        match (&ident, ident.kind()) {
            (_, Kind::Error) => {}
            (Type::Metatype(Some(t)), _) => {
                result = (**t).clone();
                if let Some(wkt) = well_known_name(&result) {
                    name = wkt.to_string();
                } else if result.kind() == Kind::Struct {
                    name = result.declared_type_name();
                } else {
                    let shown = result.declared_type_name();
                    self.report(Stage::Type, id, format!("'{shown}' is not a message type"));
                    result = Type::Error;
                }
            }
            _ => {
                let shown = ident.declared_type_name();
                self.report(Stage::Type, id, format!("'{shown}' is not a type"));
            }
        }
        self.set_type(id, result);
        for entry in &s.entries {
            let EntryExpr::StructField(f) = &entry.expr else {
                continue;
            };
            self.check(&f.value);
            let field_type = self
                .lookup_field_type(entry.id, &name, &f.field)
                .unwrap_or(Type::Error);
            let value_type = self.type_of(f.value.id);
            if !self.is_assignable(&field_type, &value_type) {
                self.report(
                    Stage::Type,
                    entry.id,
                    format!(
                        "expected type of field '{}' is '{field_type}' but provided type is '{value_type}'",
                        f.field
                    ),
                );
            }
        }
    }

    fn check_comprehension(&mut self, id: u64, c: &ComprehensionExpr) {
        self.check(&c.iter_range);
        self.check(&c.accu_init);
        let range = substitute(&self.mappings, &self.type_of(c.iter_range.id), false);
        let accu = self.type_of(c.accu_init.id);
        // cel-go's scoped checker environment does not carry the disabled overloads over.
        self.cross_type_disabled = false;
        self.locals.push((c.accu_var.clone(), accu.clone()));
        let var = match range.kind() {
            Kind::List | Kind::Map => range.params()[0].clone(),
            Kind::Dyn | Kind::Error | Kind::TypeParam => {
                self.is_assignable(&Type::Dyn, &range);
                Type::Dyn
            }
            _ => {
                self.report(
                    Stage::Type,
                    c.iter_range.id,
                    format!(
                        "expression of type '{range}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                Type::Error
            }
        };
        self.locals.push((c.iter_var.clone(), var));
        self.check(&c.loop_cond);
        self.assert_type(&c.loop_cond, &BOOL);
        self.check(&c.loop_step);
        self.assert_type(&c.loop_step, &accu);
        self.locals.pop();
        self.check(&c.result);
        self.locals.pop();
        let t = substitute(&self.mappings, &self.type_of(c.result.id), false);
        self.set_type(id, t);
    }

    fn assert_type(&mut self, e: &IdedExpr, expected: &Type) {
        let actual = self.type_of(e.id);
        if !self.is_assignable(expected, &actual) {
            self.type_mismatch(e.id, expected, &actual);
        }
    }

    /// Why the value of `e`, typed `dyn`, is never a bool: both branches of a conditional, or a
    /// call all of whose overloads return something else.
    fn never_bool_of(&self, e: &IdedExpr) -> Option<(String, Vec<Type>)> {
        let Expr::Call(c) = &e.expr else {
            return None;
        };
        if c.func_name == "_?_:_" && c.args.len() == 3 {
            let (f, mut types) = self.never_bool_of(&c.args[1])?;
            let (_, others) = self.never_bool_of(&c.args[2])?;
            for t in others {
                if !types.iter().any(|s| is_exact(s, &t)) {
                    types.push(t);
                }
            }
            return Some((f, types));
        }
        self.never_bool.get(&e.id).cloned()
    }
}

/// Expression types by id. The parser numbers expressions 1, 2, … and macro expansion from
/// [`FIRST_MACRO_ID`] on, so two vectors hold them densely; a hash map keyed by id cost more
/// than the rest of the checker.
#[derive(Default)]
struct TypeTable {
    parsed: Vec<Option<Type>>,
    expanded: Vec<Option<Type>>,
    /// Ids outside both runs, which neither numbering produces.
    other: HashMap<u64, Type>,
}

/// Beyond any id a size-capped rule gets.
const DENSE_IDS: u64 = 1 << 20;

impl TypeTable {
    fn slot(&mut self, id: u64) -> Option<&mut Option<Type>> {
        let (table, index) = match id.checked_sub(FIRST_MACRO_ID) {
            Some(i) => (&mut self.expanded, i),
            None => (&mut self.parsed, id),
        };
        if index >= DENSE_IDS {
            return None;
        }
        let index = index as usize;
        if table.len() <= index {
            table.resize(index + 1, None);
        }
        Some(&mut table[index])
    }

    fn set(&mut self, id: u64, t: Type) {
        match self.slot(id) {
            Some(slot) => *slot = Some(t),
            None => {
                self.other.insert(id, t);
            }
        }
    }

    fn get(&self, id: u64) -> Option<&Type> {
        let (table, index) = match id.checked_sub(FIRST_MACRO_ID) {
            Some(i) => (&self.expanded, i),
            None => (&self.parsed, id),
        };
        match usize::try_from(index).ok().and_then(|i| table.get(i)) {
            Some(t) => t.as_ref(),
            None => self.other.get(&id),
        }
    }
}

/// cel-go's extension libraries, which Sveltos does not load: their functions, and the
/// namespaces that prefix some of them (`math.greatest`, `base64.encode`).
const EXTENSION_FUNCTIONS: [&str; 26] = [
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "quote",
    "reverse",
    "format",
    "slice",
    "flatten",
    "distinct",
    "sort",
    "sortBy",
    "first",
    "last",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "orValue",
    "hasValue",
    "optMap",
];
const EXTENSION_NAMESPACES: [&str; 7] = [
    "math", "sets", "base64", "strings", "lists", "optional", "cel",
];

fn undeclared_hint(name: &str, function: bool) -> Option<&'static str> {
    let name = name.strip_prefix('.').unwrap_or(name);
    if function {
        if name == "existsOne" {
            return Some("cel-go's default environment spells this macro `exists_one`");
        }
        return EXTENSION_FUNCTIONS
            .contains(&name)
            .then_some("it comes from a cel-go extension library, and Sveltos loads none");
    }
    Some(match name {
        "self" => "Sveltos binds the object as `resource`, not `self`: write `resource.` instead",
        n if EXTENSION_NAMESPACES.contains(&n) => {
            "a cel-go extension library's namespace; Sveltos loads no extension library"
        }
        _ => "the only variable Sveltos declares is `resource`",
    })
}

/// Whether a declared result type rules out a bool value.
fn never_bool(t: &Type) -> bool {
    !matches!(
        t,
        Type::Dyn
            | Type::Any
            | Type::Error
            | Type::Param(_)
            | Type::Prim(Prim::Bool)
            | Type::Wrapper(Prim::Bool)
    )
}

/// cel-go's `containers.ToQualifiedName`: `a.b.c` for identifiers and field selections.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(s) if !s.test => {
            let mut q = qualified_name(&s.operand)?;
            q.push('.');
            q.push_str(&s.field);
            Some(q)
        }
        _ => None,
    }
}

/// The message a well-known CEL type is created from (`google.protobuf.Int32Value{}` is read
/// as an `Int64Value`), as cel-go's `getWellKnownTypeName`.
fn well_known_name(t: &Type) -> Option<&'static str> {
    Some(match t {
        Type::Any => "google.protobuf.Any",
        Type::Duration => "google.protobuf.Duration",
        Type::Timestamp => "google.protobuf.Timestamp",
        Type::Dyn => "google.protobuf.Value",
        Type::Null => "google.protobuf.NullValue",
        Type::Wrapper(p) => match p {
            Prim::Bool => "google.protobuf.BoolValue",
            Prim::Bytes => "google.protobuf.BytesValue",
            Prim::Double => "google.protobuf.DoubleValue",
            Prim::Int => "google.protobuf.Int64Value",
            Prim::String => "google.protobuf.StringValue",
            Prim::Uint => "google.protobuf.UInt64Value",
        },
        Type::List(e) if **e == Type::Dyn => "google.protobuf.ListValue",
        Type::Map(k, v) if **k == STRING && **v == Type::Dyn => "google.protobuf.Struct",
        _ => return None,
    })
}
