//! What cel-go's default environment (`cel.NewEnv`, no extension libraries) declares: the
//! standard functions with their overloads in declaration order (`common/stdlib/standard.go`),
//! the type identifiers, and the protobuf well-known messages its type registry knows.
//!
//! Order matters: the first matching overload gives a call its result type, and every candidate
//! overload with type parameters consumes fresh type variables (`_var0`, `_var1`, ...), whose
//! names appear in messages.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::types::{Prim, Type, BOOL, BYTES, DOUBLE, INT, STRING, UINT};

pub struct Overload {
    pub member: bool,
    /// Argument types, the receiver first for a member overload.
    pub args: Vec<Type>,
    pub result: Type,
    /// The overload's type parameters. cel-go collects them into a Go map, so its order is
    /// random where an overload has two (`index_map`, `in_map`, `size_map`); sorted here.
    pub type_params: Vec<Arc<str>>,
    /// A comparison across int, uint and double, which cel-go's default environment disables.
    pub cross_type: bool,
}

pub struct Function {
    pub name: &'static str,
    pub overloads: Vec<Overload>,
}

pub struct Stdlib {
    functions: HashMap<&'static str, Function>,
    idents: HashMap<String, Type>,
}

impl Stdlib {
    pub fn get() -> &'static Stdlib {
        static LIB: OnceLock<Stdlib> = OnceLock::new();
        LIB.get_or_init(build)
    }

    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.get(name)
    }

    /// A global identifier: a type name (`int`, `google.protobuf.Duration`) or `resource`.
    pub fn ident(&self, name: &str) -> Option<&Type> {
        self.idents.get(name)
    }
}

/// The CEL type cel-go uses for a well-known protobuf message (`types.NewObjectType`).
pub fn message_type(name: &str) -> Option<Type> {
    Some(match name {
        "google.protobuf.Any" => Type::Any,
        "google.protobuf.Duration" => Type::Duration,
        "google.protobuf.Timestamp" => Type::Timestamp,
        "google.protobuf.Empty" => Type::Struct(Arc::from(name)),
        "google.protobuf.Struct" => Type::map(STRING, Type::Dyn),
        "google.protobuf.Value" => Type::Dyn,
        "google.protobuf.ListValue" => Type::list(Type::Dyn),
        other => Type::Wrapper(wrapped(other)?),
    })
}

fn wrapped(message: &str) -> Option<Prim> {
    Some(match message {
        "google.protobuf.BoolValue" => Prim::Bool,
        "google.protobuf.BytesValue" => Prim::Bytes,
        "google.protobuf.DoubleValue" | "google.protobuf.FloatValue" => Prim::Double,
        "google.protobuf.Int32Value" | "google.protobuf.Int64Value" => Prim::Int,
        "google.protobuf.StringValue" => Prim::String,
        "google.protobuf.UInt32Value" | "google.protobuf.UInt64Value" => Prim::Uint,
        _ => return None,
    })
}

/// The type of field `field` of well-known message `message`, as cel-go's registry reports it
/// (enums are `int`, `Struct` is `map(string, dyn)`, `Value` is `dyn`).
pub fn field_type(message: &str, field: &str) -> Option<Type> {
    if let Some(p) = wrapped(message) {
        return (field == "value").then_some(Type::Prim(p));
    }
    Some(match (message, field) {
        ("google.protobuf.Any", "type_url") => STRING,
        ("google.protobuf.Any", "value") => BYTES,
        ("google.protobuf.Duration" | "google.protobuf.Timestamp", "seconds" | "nanos") => INT,
        ("google.protobuf.Struct", "fields") => Type::map(STRING, Type::Dyn),
        ("google.protobuf.Value", "null_value") => INT,
        ("google.protobuf.Value", "number_value") => DOUBLE,
        ("google.protobuf.Value", "string_value") => STRING,
        ("google.protobuf.Value", "bool_value") => BOOL,
        ("google.protobuf.Value", "struct_value") => Type::map(STRING, Type::Dyn),
        ("google.protobuf.Value", "list_value") => Type::list(Type::Dyn),
        ("google.protobuf.ListValue", "values") => Type::list(Type::Dyn),
        _ => return None,
    })
}

/// Enum constants of the well-known types (`google.protobuf.NullValue.NULL_VALUE`).
pub fn enum_value(name: &str) -> Option<Type> {
    (name == "google.protobuf.NullValue.NULL_VALUE").then_some(INT)
}

struct Builder {
    functions: HashMap<&'static str, Function>,
    current: Option<Function>,
}

impl Builder {
    fn function(&mut self, name: &'static str) -> &mut Self {
        self.finish();
        self.current = Some(Function {
            name,
            overloads: Vec::new(),
        });
        self
    }

    fn add(
        &mut self,
        id: impl Into<String>,
        member: bool,
        args: Vec<Type>,
        result: Type,
    ) -> &mut Self {
        let id = id.into();
        let mut type_params = Vec::new();
        for t in args.iter().chain(std::iter::once(&result)) {
            collect_params(t, &mut type_params);
        }
        type_params.sort();
        type_params.dedup();
        if let Some(f) = self.current.as_mut() {
            f.overloads.push(Overload {
                cross_type: is_cross_type(&id),
                member,
                args,
                result,
                type_params,
            });
        }
        self
    }

    fn global(&mut self, id: impl Into<String>, args: Vec<Type>, result: Type) -> &mut Self {
        self.add(id, false, args, result)
    }

    fn member(&mut self, id: impl Into<String>, args: Vec<Type>, result: Type) -> &mut Self {
        self.add(id, true, args, result)
    }

    fn finish(&mut self) {
        if let Some(f) = self.current.take() {
            self.functions.insert(f.name, f);
        }
    }
}

fn collect_params(t: &Type, out: &mut Vec<Arc<str>>) {
    if let Type::Param(name) = t {
        out.push(name.clone());
    }
    for p in t.params() {
        collect_params(p, out);
    }
}

/// cel-go's `crossTypeNumericComparisonOverloads`: `<`, `<=`, `>`, `>=` across int, uint and
/// double, disabled unless `cel.CrossTypeNumericComparisons(true)`.
fn is_cross_type(id: &str) -> bool {
    let Some(rest) = ["less_equals_", "less_", "greater_equals_", "greater_"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
    else {
        return false;
    };
    matches!(
        rest,
        "double_int64"
            | "double_uint64"
            | "int64_double"
            | "int64_uint64"
            | "uint64_double"
            | "uint64_int64"
    )
}

fn build() -> Stdlib {
    let a = || Type::param("A");
    let b = || Type::param("B");
    let list_a = || Type::list(a());
    let map_ab = || Type::map(a(), b());
    let (dur, ts) = (|| Type::Duration, || Type::Timestamp);

    let mut lib = Builder {
        functions: HashMap::new(),
        current: None,
    };
    lib.function("_?_:_")
        .global("conditional", vec![BOOL, a(), a()], a());
    lib.function("_&&_")
        .global("logical_and", vec![BOOL, BOOL], BOOL);
    lib.function("_||_")
        .global("logical_or", vec![BOOL, BOOL], BOOL);
    lib.function("!_").global("logical_not", vec![BOOL], BOOL);
    lib.function("@not_strictly_false")
        .global("not_strictly_false", vec![BOOL], BOOL);
    lib.function("_==_").global("equals", vec![a(), a()], BOOL);
    lib.function("_!=_")
        .global("not_equals", vec![a(), a()], BOOL);
    lib.function("_+_")
        .global("add_bytes", vec![BYTES, BYTES], BYTES)
        .global("add_double", vec![DOUBLE, DOUBLE], DOUBLE)
        .global("add_duration_duration", vec![dur(), dur()], dur())
        .global("add_duration_timestamp", vec![dur(), ts()], ts())
        .global("add_timestamp_duration", vec![ts(), dur()], ts())
        .global("add_int64", vec![INT, INT], INT)
        .global("add_list", vec![list_a(), list_a()], list_a())
        .global("add_string", vec![STRING, STRING], STRING)
        .global("add_uint64", vec![UINT, UINT], UINT);
    lib.function("_/_")
        .global("divide_double", vec![DOUBLE, DOUBLE], DOUBLE)
        .global("divide_int64", vec![INT, INT], INT)
        .global("divide_uint64", vec![UINT, UINT], UINT);
    lib.function("_%_")
        .global("modulo_int64", vec![INT, INT], INT)
        .global("modulo_uint64", vec![UINT, UINT], UINT);
    lib.function("_*_")
        .global("multiply_double", vec![DOUBLE, DOUBLE], DOUBLE)
        .global("multiply_int64", vec![INT, INT], INT)
        .global("multiply_uint64", vec![UINT, UINT], UINT);
    lib.function("-_")
        .global("negate_double", vec![DOUBLE], DOUBLE)
        .global("negate_int64", vec![INT], INT);
    lib.function("_-_")
        .global("subtract_double", vec![DOUBLE, DOUBLE], DOUBLE)
        .global("subtract_duration_duration", vec![dur(), dur()], dur())
        .global("subtract_int64", vec![INT, INT], INT)
        .global("subtract_timestamp_duration", vec![ts(), dur()], ts())
        .global("subtract_timestamp_timestamp", vec![ts(), ts()], dur())
        .global("subtract_uint64", vec![UINT, UINT], UINT);
    for (name, prefix) in [
        ("_<_", "less"),
        ("_<=_", "less_equals"),
        ("_>_", "greater"),
        ("_>=_", "greater_equals"),
    ] {
        lib.function(name);
        for (suffix, lhs, rhs) in [
            ("bool", BOOL, BOOL),
            ("int64", INT, INT),
            ("int64_double", INT, DOUBLE),
            ("int64_uint64", INT, UINT),
            ("uint64", UINT, UINT),
            ("uint64_double", UINT, DOUBLE),
            ("uint64_int64", UINT, INT),
            ("double", DOUBLE, DOUBLE),
            ("double_int64", DOUBLE, INT),
            ("double_uint64", DOUBLE, UINT),
            ("string", STRING, STRING),
            ("bytes", BYTES, BYTES),
            ("timestamp", ts(), ts()),
            ("duration", dur(), dur()),
        ] {
            lib.global(format!("{prefix}_{suffix}"), vec![lhs, rhs], BOOL);
        }
    }
    lib.function("_[_]")
        .global("index_list", vec![list_a(), INT], a())
        .global("index_map", vec![map_ab(), a()], b());
    lib.function("@in")
        .global("in_list", vec![a(), list_a()], BOOL)
        .global("in_map", vec![a(), map_ab()], BOOL);
    lib.function("size")
        .global("size_bytes", vec![BYTES], INT)
        .member("bytes_size", vec![BYTES], INT)
        .global("size_list", vec![list_a()], INT)
        .member("list_size", vec![list_a()], INT)
        .global("size_map", vec![map_ab()], INT)
        .member("map_size", vec![map_ab()], INT)
        .global("size_string", vec![STRING], INT)
        .member("string_size", vec![STRING], INT);
    lib.function("type")
        .global("type", vec![a()], Type::type_of(a()));
    lib.function("bool")
        .global("bool_to_bool", vec![BOOL], BOOL)
        .global("string_to_bool", vec![STRING], BOOL);
    lib.function("bytes")
        .global("bytes_to_bytes", vec![BYTES], BYTES)
        .global("string_to_bytes", vec![STRING], BYTES);
    lib.function("double")
        .global("double_to_double", vec![DOUBLE], DOUBLE)
        .global("int64_to_double", vec![INT], DOUBLE)
        .global("string_to_double", vec![STRING], DOUBLE)
        .global("uint64_to_double", vec![UINT], DOUBLE);
    lib.function("duration")
        .global("duration_to_duration", vec![dur()], dur())
        .global("int64_to_duration", vec![INT], dur())
        .global("string_to_duration", vec![STRING], dur());
    lib.function("dyn").global("to_dyn", vec![a()], Type::Dyn);
    lib.function("int")
        .global("int64_to_int64", vec![INT], INT)
        .global("double_to_int64", vec![DOUBLE], INT)
        .global("duration_to_int64", vec![dur()], INT)
        .global("string_to_int64", vec![STRING], INT)
        .global("timestamp_to_int64", vec![ts()], INT)
        .global("uint64_to_int64", vec![UINT], INT);
    lib.function("string")
        .global("string_to_string", vec![STRING], STRING)
        .global("bool_to_string", vec![BOOL], STRING)
        .global("bytes_to_string", vec![BYTES], STRING)
        .global("double_to_string", vec![DOUBLE], STRING)
        .global("duration_to_string", vec![dur()], STRING)
        .global("int64_to_string", vec![INT], STRING)
        .global("timestamp_to_string", vec![ts()], STRING)
        .global("uint64_to_string", vec![UINT], STRING);
    lib.function("timestamp")
        .global("timestamp_to_timestamp", vec![ts()], ts())
        .global("int64_to_timestamp", vec![INT], ts())
        .global("string_to_timestamp", vec![STRING], ts());
    lib.function("uint")
        .global("uint64_to_uint64", vec![UINT], UINT)
        .global("double_to_uint64", vec![DOUBLE], UINT)
        .global("int64_to_uint64", vec![INT], UINT)
        .global("string_to_uint64", vec![STRING], UINT);
    lib.function("contains")
        .member("contains_string", vec![STRING, STRING], BOOL);
    lib.function("endsWith")
        .member("ends_with_string", vec![STRING, STRING], BOOL);
    lib.function("startsWith")
        .member("starts_with_string", vec![STRING, STRING], BOOL);
    lib.function("matches")
        .global("matches", vec![STRING, STRING], BOOL)
        .member("matches_string", vec![STRING, STRING], BOOL);
    for (name, ts_id, ts_tz_id, dur_id) in [
        (
            "getFullYear",
            "timestamp_to_year",
            "timestamp_to_year_with_tz",
            None,
        ),
        (
            "getMonth",
            "timestamp_to_month",
            "timestamp_to_month_with_tz",
            None,
        ),
        (
            "getDayOfYear",
            "timestamp_to_day_of_year",
            "timestamp_to_day_of_year_with_tz",
            None,
        ),
        (
            "getDayOfMonth",
            "timestamp_to_day_of_month",
            "timestamp_to_day_of_month_with_tz",
            None,
        ),
        (
            "getDate",
            "timestamp_to_day_of_month_1_based",
            "timestamp_to_day_of_month_1_based_with_tz",
            None,
        ),
        (
            "getDayOfWeek",
            "timestamp_to_day_of_week",
            "timestamp_to_day_of_week_with_tz",
            None,
        ),
        (
            "getHours",
            "timestamp_to_hours",
            "timestamp_to_hours_with_tz",
            Some("duration_to_hours"),
        ),
        (
            "getMinutes",
            "timestamp_to_minutes",
            "timestamp_to_minutes_with_tz",
            Some("duration_to_minutes"),
        ),
        (
            "getSeconds",
            "timestamp_to_seconds",
            "timestamp_to_seconds_with_tz",
            Some("duration_to_seconds"),
        ),
        (
            "getMilliseconds",
            "timestamp_to_milliseconds",
            "timestamp_to_milliseconds_with_tz",
            Some("duration_to_milliseconds"),
        ),
    ] {
        lib.function(name)
            .member(ts_id, vec![ts()], INT)
            .member(ts_tz_id, vec![ts(), STRING], INT);
        if let Some(id) = dur_id {
            lib.member(id, vec![dur()], INT);
        }
    }
    lib.finish();

    let mut idents = HashMap::new();
    for t in [
        BOOL,
        BYTES,
        DOUBLE,
        Type::Duration,
        INT,
        list_a(),
        map_ab(),
        Type::Null,
        STRING,
        Type::Timestamp,
        Type::Metatype(None),
        UINT,
    ] {
        idents.insert(t.type_name().to_string(), Type::type_of(t));
    }
    idents.insert(super::VARIABLE.to_string(), Type::Dyn);
    Stdlib {
        functions: lib.functions,
        idents,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declares_what_cel_go_declares() {
        let lib = Stdlib::get();
        assert_eq!(lib.function("_+_").map(|f| f.overloads.len()), Some(9));
        assert_eq!(lib.function("_<_").map(|f| f.overloads.len()), Some(14));
        assert!(lib.function("lowerAscii").is_none());
        assert!(lib.function("existsOne").is_none());
        assert_eq!(
            lib.ident("list").map(ToString::to_string).as_deref(),
            Some("type(list(A))")
        );
        assert_eq!(
            lib.ident("google.protobuf.Duration")
                .map(ToString::to_string)
                .as_deref(),
            Some("type(duration)")
        );
        assert!(lib.ident("dyn").is_none());
        assert_eq!(lib.ident("resource"), Some(&Type::Dyn));
    }

    #[test]
    fn only_mixed_numeric_comparisons_are_cross_type() {
        let lib = Stdlib::get();
        for f in ["_<_", "_<=_", "_>_", "_>=_"] {
            let cross = lib
                .function(f)
                .unwrap()
                .overloads
                .iter()
                .filter(|o| o.cross_type);
            assert_eq!(cross.count(), 6, "{f}");
        }
        assert!(!is_cross_type("less_int64"));
        assert!(is_cross_type("greater_equals_uint64_int64"));
    }

    #[test]
    fn index_map_has_two_sorted_type_parameters() {
        let o = &Stdlib::get().function("_[_]").unwrap().overloads[1];
        assert_eq!(
            o.type_params.iter().map(|p| &**p).collect::<Vec<_>>(),
            ["A", "B"]
        );
    }
}
