//! CEL types as cel-go's type checker sees them (`common/types/types.go`), and the unification
//! rules of `checker/types.go`: assignability with type-parameter substitution, the "more
//! general" join of two types, and substitution of bound parameters.
//!
//! A few cel-go behaviours are kept on purpose because verdicts depend on them: a wrapper type
//! (`google.protobuf.Int64Value`) has the kind and name of its primitive, so it is "exactly"
//! `int` for [`is_exact`]; `null` is assignable to messages, `any`, `duration` and `timestamp`
//! (the legacy nullability of the first checker); type parameters are looked up by name.

use std::fmt;
use std::sync::Arc;

/// The primitive types that have a protobuf wrapper (`google.protobuf.BoolValue`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    Bool,
    Bytes,
    Double,
    Int,
    String,
    Uint,
}

impl Prim {
    fn name(self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Bytes => "bytes",
            Prim::Double => "double",
            Prim::Int => "int",
            Prim::String => "string",
            Prim::Uint => "uint",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Prim::Bool => Kind::Bool,
            Prim::Bytes => Kind::Bytes,
            Prim::Double => Kind::Double,
            Prim::Int => Kind::Int,
            Prim::String => Kind::String,
            Prim::Uint => Kind::Uint,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    Dyn,
    /// `google.protobuf.Any`.
    Any,
    Error,
    Null,
    Prim(Prim),
    /// A nullable primitive: the type of a protobuf wrapper message.
    Wrapper(Prim),
    Duration,
    Timestamp,
    List(Arc<Type>),
    Map(Arc<Type>, Arc<Type>),
    /// `type`, or `type(T)`: the type of a type value (cel-go's `TypeType`).
    Metatype(Option<Arc<Type>>),
    Param(Arc<str>),
    /// A protobuf message without a CEL equivalent (`google.protobuf.Empty`).
    Struct(Arc<str>),
}

/// cel-go's `types.Kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dyn,
    Any,
    Bool,
    Bytes,
    Double,
    Duration,
    Error,
    Int,
    List,
    Map,
    Null,
    String,
    Struct,
    Timestamp,
    Type,
    TypeParam,
    Uint,
}

pub const BOOL: Type = Type::Prim(Prim::Bool);
pub const BYTES: Type = Type::Prim(Prim::Bytes);
pub const DOUBLE: Type = Type::Prim(Prim::Double);
pub const INT: Type = Type::Prim(Prim::Int);
pub const STRING: Type = Type::Prim(Prim::String);
pub const UINT: Type = Type::Prim(Prim::Uint);

impl Type {
    pub fn list(elem: Type) -> Type {
        Type::List(Arc::new(elem))
    }

    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Arc::new(key), Arc::new(value))
    }

    pub fn type_of(t: Type) -> Type {
        Type::Metatype(Some(Arc::new(t)))
    }

    pub fn param(name: &str) -> Type {
        Type::Param(Arc::from(name))
    }

    pub fn kind(&self) -> Kind {
        match self {
            Type::Dyn => Kind::Dyn,
            Type::Any => Kind::Any,
            Type::Error => Kind::Error,
            Type::Null => Kind::Null,
            Type::Prim(p) | Type::Wrapper(p) => p.kind(),
            Type::Duration => Kind::Duration,
            Type::Timestamp => Kind::Timestamp,
            Type::List(_) => Kind::List,
            Type::Map(..) => Kind::Map,
            Type::Metatype(_) => Kind::Type,
            Type::Param(_) => Kind::TypeParam,
            Type::Struct(_) => Kind::Struct,
        }
    }

    /// cel-go's `TypeName()`: the runtime type name, parameters erased.
    pub fn type_name(&self) -> &str {
        match self {
            Type::Dyn => "dyn",
            Type::Any => "google.protobuf.Any",
            Type::Error => "error",
            Type::Null => "null_type",
            Type::Prim(p) | Type::Wrapper(p) => p.name(),
            Type::Duration => "google.protobuf.Duration",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::List(_) => "list",
            Type::Map(..) => "map",
            Type::Metatype(_) => "type",
            Type::Param(name) | Type::Struct(name) => name,
        }
    }

    /// cel-go's `DeclaredTypeName()`: wrappers are named `wrapper(T)`.
    pub fn declared_type_name(&self) -> String {
        match self {
            Type::Wrapper(p) => format!("wrapper({})", p.name()),
            other => other.type_name().to_string(),
        }
    }

    fn param_count(&self) -> usize {
        match self {
            Type::List(_) | Type::Metatype(Some(_)) => 1,
            Type::Map(..) => 2,
            _ => 0,
        }
    }

    /// The type parameters of `self` (cel-go's `Parameters()`), in order.
    pub fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(e) => vec![e],
            Type::Metatype(Some(t)) => vec![t],
            Type::Map(k, v) => vec![k, v],
            _ => Vec::new(),
        }
    }

    /// The same type with new parameters, in the order of [`Type::params`].
    fn with_params(&self, mut params: Vec<Type>) -> Type {
        match self {
            Type::List(_) if params.len() == 1 => Type::List(Arc::new(params.remove(0))),
            Type::Metatype(Some(_)) if params.len() == 1 => Type::type_of(params.remove(0)),
            Type::Map(..) if params.len() == 2 => {
                let value = params.remove(1);
                Type::map(params.remove(0), value)
            }
            other => other.clone(),
        }
    }

    /// cel-go's `Type.isDyn`: the types a value of any type may be assigned to.
    fn accepts_anything(&self) -> bool {
        matches!(self, Type::Dyn | Type::Any | Type::Param(_))
    }

    /// cel-go's `Type.IsAssignableType`: whether a value of type `from` may be assigned to `self`.
    pub fn is_assignable_type(&self, from: &Type) -> bool {
        match self {
            Type::Wrapper(p) => {
                Type::Null.default_is_assignable_type(from)
                    || Type::Prim(*p).default_is_assignable_type(from)
            }
            _ => self.default_is_assignable_type(from),
        }
    }

    fn default_is_assignable_type(&self, from: &Type) -> bool {
        if self.accepts_anything() {
            return true;
        }
        if self.kind() != from.kind()
            || self.type_name() != from.type_name()
            || self.param_count() != from.param_count()
        {
            return false;
        }
        self.params()
            .into_iter()
            .zip(from.params())
            .all(|(t, f)| t.is_assignable_type(f))
    }
}

/// cel-go's `IsExactType`: same kind, name and (recursively) parameters.
pub fn is_exact(a: &Type, b: &Type) -> bool {
    if a.kind() != b.kind() || a.param_count() != b.param_count() || a.type_name() != b.type_name()
    {
        return false;
    }
    a.params()
        .into_iter()
        .zip(b.params())
        .all(|(x, y)| is_exact(x, y))
}

/// cel-go's `FormatCELType`, the spelling used in every checker message.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => f.write_str("any"),
            Type::Duration => f.write_str("duration"),
            Type::Error => f.write_str("!error!"),
            Type::Null => f.write_str("null"),
            Type::Timestamp => f.write_str("timestamp"),
            Type::Param(name) => f.write_str(name),
            other => {
                let params = other.params();
                if params.is_empty() {
                    return f.write_str(&other.declared_type_name());
                }
                write!(f, "{}(", other.type_name())?;
                for (i, p) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// cel-go's `formatFunctionDeclType` without a result: `(int, string)`, or `string.(int)` for a
/// receiver call.
pub fn write_signature(
    f: &mut impl fmt::Write,
    target: Option<&Type>,
    args: &[Type],
) -> fmt::Result {
    if let Some(t) = target {
        write!(f, "{t}.")?;
    }
    f.write_str("(")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    f.write_str(")")
}

/// Bindings of type parameters, looked up by name as cel-go does.
///
/// cel-go tries each assignment on a copy of the bindings and keeps the copy on success; here
/// a failed attempt is undone instead (the checker tries dozens of overloads per operator, and
/// copying every binding made for the rule so far on each try dominated checking time).
#[derive(Clone, Debug, Default)]
pub struct Mapping {
    bindings: Vec<(Arc<str>, Type)>,
    /// Bindings replaced during the current attempt, with their previous types.
    replaced: Vec<(usize, Type)>,
}

impl Mapping {
    pub fn find(&self, t: &Type) -> Option<&Type> {
        let Type::Param(name) = t else {
            return None;
        };
        self.bindings
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    pub fn add(&mut self, from: &Type, to: Type) {
        let Type::Param(name) = from else {
            return;
        };
        match self.bindings.iter().position(|(n, _)| n == name) {
            Some(i) => {
                let previous = std::mem::replace(&mut self.bindings[i].1, to);
                self.replaced.push((i, previous));
            }
            None => self.bindings.push((name.clone(), to)),
        }
    }

    /// Runs `attempt`, keeping the bindings it made if it succeeds and undoing them if not.
    fn attempt(&mut self, attempt: impl FnOnce(&mut Mapping) -> bool) -> bool {
        let added_from = self.bindings.len();
        self.replaced.clear();
        let ok = attempt(self);
        if !ok {
            while let Some((i, previous)) = self.replaced.pop() {
                self.bindings[i].1 = previous;
            }
            self.bindings.truncate(added_from);
        }
        self.replaced.clear();
        ok
    }
}

/// Deeper than any type a size-capped rule can build: a cycle in the bindings (which the occurs
/// check rules out) would stop here instead of exhausting the stack.
const MAX_TYPE_DEPTH: usize = 4096;

/// cel-go checker's `isDyn`: `dyn` or `google.protobuf.Any` (not a type parameter).
pub fn is_dyn(t: &Type) -> bool {
    matches!(t, Type::Dyn | Type::Any)
}

pub fn is_dyn_or_error(t: &Type) -> bool {
    is_dyn(t) || matches!(t, Type::Error)
}

/// Whether `t1` is equal to or less specific than `t2` (less specific: matches through `dyn`).
pub fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    let (kind1, kind2) = (t1.kind(), t2.kind());
    if is_dyn(t1) || kind1 == Kind::TypeParam {
        return true;
    }
    if is_dyn(t2) || kind2 == Kind::TypeParam {
        return false;
    }
    if kind1 != kind2 {
        return false;
    }
    match kind1 {
        Kind::List | Kind::Map => t1
            .params()
            .into_iter()
            .zip(t2.params())
            .all(|(a, b)| is_equal_or_less_specific(a, b)),
        Kind::Type => true,
        _ => is_exact(t1, t2),
    }
}

/// The more general of two types known to unify.
pub fn most_general(t1: &Type, t2: &Type) -> Type {
    if is_equal_or_less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

/// Whether `t1` is assignable to `t2`; if so `m` holds the bindings that make it so, if not
/// `m` is unchanged.
pub fn is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    m.attempt(|m| internal_is_assignable(m, t1, t2, 0))
}

/// Whether each of `l1` is assignable to its counterpart in `l2`, binding as [`is_assignable`].
pub fn is_assignable_list(m: &mut Mapping, l1: &[Type], l2: &[Type]) -> bool {
    m.attempt(|m| internal_is_assignable_list(m, l1.iter(), l2.iter(), l1.len() == l2.len(), 0))
}

fn internal_is_assignable_list<'a>(
    m: &mut Mapping,
    l1: impl Iterator<Item = &'a Type>,
    l2: impl Iterator<Item = &'a Type>,
    same_len: bool,
    depth: usize,
) -> bool {
    if !same_len {
        return false;
    }
    for (t1, t2) in l1.zip(l2) {
        if !internal_is_assignable(m, t1, t2, depth + 1) {
            return false;
        }
    }
    true
}

fn internal_is_assignable(m: &mut Mapping, t1: &Type, t2: &Type, depth: usize) -> bool {
    if depth > MAX_TYPE_DEPTH {
        return false;
    }
    let (kind1, kind2) = (t1.kind(), t2.kind());
    if kind2 == Kind::TypeParam {
        let (valid, has_sub) = is_valid_type_substitution(m, t1, t2, depth);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if kind1 == Kind::TypeParam {
        return is_valid_type_substitution(m, t2, t1, depth).0;
    }
    if is_dyn_or_error(t1) || is_dyn_or_error(t2) {
        return true;
    }
    if kind1 == Kind::Null {
        return internal_is_assignable_null(t2);
    }
    if kind2 == Kind::Null {
        return internal_is_assignable_null(t1);
    }
    match kind1 {
        Kind::Bool
        | Kind::Bytes
        | Kind::Double
        | Kind::Int
        | Kind::String
        | Kind::Uint
        | Kind::Any
        | Kind::Duration
        | Kind::Timestamp
        | Kind::Struct => t1.is_assignable_type(t2),
        Kind::Type => kind2 == Kind::Type,
        Kind::List | Kind::Map => {
            kind1 == kind2
                && t1.type_name() == t2.type_name()
                && internal_is_assignable_list(
                    m,
                    t1.params().into_iter(),
                    t2.params().into_iter(),
                    t1.param_count() == t2.param_count(),
                    depth,
                )
        }
        _ => false,
    }
}

/// Whether `t2` (or its binding) is a valid substitution for `t1`, and whether `t2` is bound.
fn is_valid_type_substitution(m: &mut Mapping, t1: &Type, t2: &Type, depth: usize) -> (bool, bool) {
    if t1.kind() == t2.kind() && is_exact(t1, t2) {
        return (true, true);
    }
    if let Some(t2_sub) = m.find(t2).cloned() {
        if t1.kind() == t2_sub.kind() && is_exact(t1, &t2_sub) {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &t2_sub, depth + 1) {
            let t2_new = most_general(t1, &t2_sub);
            if not_referenced_in(m, t2, &t2_new, 0) {
                m.add(t2, t2_new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1, 0) {
        m.add(t2, t1.clone());
        return (true, false);
    }
    (false, false)
}

/// `null` is assignable to the legacy nullable kinds and to wrappers.
fn internal_is_assignable_null(t: &Type) -> bool {
    matches!(
        t.kind(),
        Kind::Struct | Kind::Any | Kind::Duration | Kind::Timestamp
    ) || t.is_assignable_type(&Type::Null)
}

/// The occurs check: `t` does not appear in `within`, directly or through bindings.
fn not_referenced_in(m: &Mapping, t: &Type, within: &Type, depth: usize) -> bool {
    if depth > MAX_TYPE_DEPTH {
        return false;
    }
    if is_exact(t, within) {
        return false;
    }
    match within.kind() {
        Kind::TypeParam => match m.find(within) {
            Some(sub) => not_referenced_in(m, t, sub, depth + 1),
            None => true,
        },
        Kind::List | Kind::Map => within
            .params()
            .into_iter()
            .all(|p| not_referenced_in(m, t, p, depth + 1)),
        _ => true,
    }
}

/// Replaces bound type parameters by their bindings; unbound ones become `dyn` when `to_dyn`.
pub fn substitute(m: &Mapping, t: &Type, to_dyn: bool) -> Type {
    substitute_at(m, t, to_dyn, 0)
}

fn substitute_at(m: &Mapping, t: &Type, to_dyn: bool, depth: usize) -> Type {
    if depth > MAX_TYPE_DEPTH {
        return Type::Dyn;
    }
    if let Some(sub) = m.find(t) {
        return substitute_at(m, sub, to_dyn, depth + 1);
    }
    match t {
        Type::Param(_) if to_dyn => Type::Dyn,
        Type::List(_) | Type::Map(..) | Type::Metatype(Some(_)) => t.with_params(
            t.params()
                .into_iter()
                .map(|p| substitute_at(m, p, to_dyn, depth + 1))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str) -> Type {
        Type::param(name)
    }

    #[test]
    fn formats_as_cel_go() {
        assert_eq!(Type::list(Type::param("_var0")).to_string(), "list(_var0)");
        assert_eq!(Type::map(STRING, Type::Dyn).to_string(), "map(string, dyn)");
        assert_eq!(
            Type::type_of(Type::list(Type::Dyn)).to_string(),
            "type(list(dyn))"
        );
        assert_eq!(Type::Metatype(None).to_string(), "type");
        assert_eq!(Type::Wrapper(Prim::Bool).to_string(), "wrapper(bool)");
        assert_eq!(Type::Null.to_string(), "null");
        assert_eq!(Type::Timestamp.to_string(), "timestamp");
        assert_eq!(Type::Any.to_string(), "any");
        assert_eq!(Type::Error.to_string(), "!error!");
    }

    #[test]
    fn wrappers_are_exactly_their_primitive_and_nullable() {
        let w = Type::Wrapper(Prim::Int);
        assert!(is_exact(&w, &INT));
        assert!(w.is_assignable_type(&Type::Null));
        assert!(w.is_assignable_type(&INT));
        assert!(INT.is_assignable_type(&w));
        assert!(!INT.is_assignable_type(&Type::Null));
    }

    #[test]
    fn parameters_bind_and_widen() {
        let mut m = Mapping::default();
        assert!(is_assignable(&mut m, &INT, &param("_var0")));
        assert_eq!(m.find(&param("_var0")), Some(&INT));
        // int then uint for the same parameter does not unify, and leaves the binding alone...
        assert!(!is_assignable(&mut m, &UINT, &param("_var0")));
        assert_eq!(m.find(&param("_var0")), Some(&INT));
        // ...but dyn widens the binding.
        assert!(is_assignable(&mut m, &Type::Dyn, &param("_var0")));
        assert_eq!(m.find(&param("_var0")), Some(&Type::Dyn));
    }

    #[test]
    fn a_failed_attempt_undoes_its_bindings() {
        let mut m = Mapping::default();
        assert!(is_assignable(&mut m, &INT, &param("A")));
        // B binds to int and A widens to dyn before the last pair fails.
        let tried = [INT, Type::Dyn, UINT];
        let against = [param("B"), param("A"), param("B")];
        assert!(!is_assignable_list(&mut m, &tried, &against));
        assert_eq!(m.find(&param("A")), Some(&INT));
        assert_eq!(m.find(&param("B")), None);
    }

    #[test]
    fn occurs_check_refuses_self_reference() {
        let mut m = Mapping::default();
        let v = param("_var0");
        assert!(!is_assignable(&mut m, &Type::list(v.clone()), &v));
        assert_eq!(m.find(&v), None);
    }

    #[test]
    fn null_assigns_to_legacy_nullables_only() {
        let mut m = Mapping::default();
        assert!(is_assignable(&mut m, &Type::Null, &Type::Duration));
        assert!(is_assignable(
            &mut m,
            &Type::Null,
            &Type::Wrapper(Prim::String)
        ));
        assert!(!is_assignable(&mut m, &Type::Null, &INT));
        assert!(!is_assignable(&mut m, &INT, &Type::Null));
    }

    #[test]
    fn substitution_replaces_bound_and_optionally_free_parameters() {
        let mut m = Mapping::default();
        m.add(&param("A"), INT);
        let t = Type::map(param("A"), param("B"));
        assert_eq!(substitute(&m, &t, false).to_string(), "map(int, B)");
        assert_eq!(substitute(&m, &t, true).to_string(), "map(int, dyn)");
    }

    #[test]
    fn lists_join_towards_dyn() {
        assert!(is_equal_or_less_specific(
            &Type::list(Type::Dyn),
            &Type::list(INT)
        ));
        assert_eq!(
            most_general(&Type::list(INT), &Type::list(Type::Dyn)),
            Type::list(Type::Dyn)
        );
    }
}
