//! One test per rule of the checker and its neighbours; the differential corpus
//! (`tests/cel_parity.rs`) checks the verdicts against cel-go at large.

use super::*;
use promotion_findings::Severity;

fn check(rule: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    check_rule(rule, &FieldPath::root("rule"), &mut out);
    out
}

fn codes(rule: &str) -> Vec<&'static str> {
    check(rule).iter().map(|f| f.code).collect()
}

/// The one error for `rule`: its code and message.
fn error(rule: &str) -> (&'static str, String) {
    let f = check(rule);
    assert_eq!(f.len(), 1, "{rule}: {f:?}");
    assert_eq!(f[0].severity, Severity::Error, "{rule}: {f:?}");
    (f[0].code, f[0].message.clone())
}

fn assert_error(rule: &str, code: &str, message: &str) {
    let (c, m) = error(rule);
    assert_eq!(c, code, "{rule}: {m}");
    assert!(m.contains(message), "{rule}: {m}");
}

#[test]
fn accepts_sveltos_rules() {
    for ok in [
        "resource.status.phase == \"Running\"",
        "has(resource.spec.replicas) && resource.spec.replicas > 0",
        "resource.status.succeeded >= 1 &&\nresource.status.conditions.filter(c, c.type == 'Complete' && c.status == 'True').size() == 1",
        "resource.status.conditions.exists(c, c.type == 'Ready')",
        "resource.spec.containers.all(c, c.image.startsWith('registry/'))",
        "resource.status.conditions.exists_one(c, c.type == 'Ready')",
        "resource.items.map(i, i.name).exists(n, n == 'x')",
        "type(resource.spec) == map",
        "true",
        "resource.metadata.name in ['a', 'b'] ? true : false",
        "resource.metadata.labels['app'] == 'x' && 'app' in resource.metadata.labels",
        "timestamp(resource.metadata.creationTimestamp) < timestamp('2024-01-01T00:00:00Z')",
        "duration(resource.spec.timeout) > duration('5m')",
        "resource.x.size() > 0 || size(resource.y) == 0",
        "int(resource.x) + 1 > 0",
    ] {
        assert!(check(ok).is_empty(), "{ok}: {:?}", check(ok));
    }
}

#[test]
fn self_is_undeclared_with_a_hint() {
    let (code, message) = error("self.status.succeeded >= 1");
    assert_eq!(code, "cel-undeclared");
    assert!(
        message.contains("undeclared reference to 'self' (in container '')"),
        "{message}"
    );
    assert!(
        message.contains("`self`") && message.contains("`resource`"),
        "{message}"
    );
    assert_eq!(codes("has(self.spec)"), ["cel-undeclared"]);
    assert!(error("object.x == 1 && object.y == 2")
        .1
        .contains("(and 1 more after it)"));
}

#[test]
fn extension_functions_are_undeclared_with_a_hint() {
    let (code, message) = error("resource.a.lowerAscii() == 'a'");
    assert_eq!(code, "cel-undeclared");
    assert!(
        message.contains("'lowerAscii'") && message.contains("extension"),
        "{message}"
    );
    assert_error(
        "foo()",
        "cel-undeclared",
        "undeclared reference to 'foo' (in container '')",
    );
    // `existsOne` is a macro cel-go declares but `cel.NewEnv` does not enable.
    assert_error("[].existsOne(x, x)", "cel-undeclared", "'existsOne'");
    assert_error(
        "[].existsOne(x, x)",
        "cel-undeclared",
        "spells this macro `exists_one`",
    );
}

#[test]
fn comprehension_variables_do_not_leak() {
    assert_error(
        "resource.items.exists(c, c.ok) && c.ok",
        "cel-undeclared",
        "'c'",
    );
    // A variable shadows `resource` inside the macro only.
    assert!(check("[1].all(resource, resource > 0) && resource.ok").is_empty());
}

#[test]
fn root_scoped_names_resolve() {
    assert!(check(".resource.x == 1").is_empty());
}

#[test]
fn overloads_are_resolved_on_argument_types() {
    for (rule, applied) in [
        ("!0", "'!_' applied to '(int)'"),
        (
            "'x'.startsWith(1)",
            "'startsWith' applied to 'string.(int)'",
        ),
        ("1u == 1", "'_==_' applied to '(uint, int)'"),
        ("1 ? true : false", "'_?_:_' applied to '(int, bool, bool)'"),
        (
            "resource.a ? 1 : 'x'",
            "'_?_:_' applied to '(dyn, int, string)'",
        ),
        ("-1u == 0u", "'-_' applied to '(uint)'"),
    ] {
        assert_error(
            rule,
            "cel-type",
            &format!("found no matching overload for {applied}"),
        );
    }
}

#[test]
fn logical_operands_and_predicates_must_be_bool() {
    assert_error(
        "true && 1",
        "cel-type",
        "expected type 'bool' but found 'int'",
    );
    assert_error(
        "[1].all(x, x)",
        "cel-type",
        "expected type 'bool' but found 'int'",
    );
    assert_error(
        "[1].exists_one(x, x)",
        "cel-type",
        "'_?_:_' applied to '(int, int, int)'",
    );
}

#[test]
fn field_selection_needs_a_map_message_or_dyn() {
    assert_error(
        "[].length",
        "cel-type",
        "type 'list(_var0)' does not support field selection",
    );
    assert_error(
        "1.e5 > 0.0",
        "cel-type",
        "type 'int' does not support field selection",
    );
    assert!(
        check("{}.a == 1").is_empty(),
        "an empty map's values are a free type"
    );
    assert_error("'x'.y == 1", "cel-type", "at line 1, column 4");
}

#[test]
fn messages_are_the_well_known_types_only() {
    assert_error("int{}", "cel-type", "'int' is not a message type");
    assert_error("resource{}", "cel-type", "'dyn' is not a type");
    assert_error("TestAllTypes{}", "cel-undeclared", "'TestAllTypes'");
    assert_error(
        "google.protobuf.Int64Value{val: 1} == 1",
        "cel-type",
        "undefined field 'val'",
    );
    assert_error(
        "google.protobuf.Value{null_value: null} == null",
        "cel-type",
        "expected type of field 'null_value' is 'int' but provided type is 'null'",
    );
    assert!(check("google.protobuf.Duration{seconds: 1} < duration('2s')").is_empty());
    assert!(check("google.protobuf.Int32Value{value: 1} == 1").is_empty());
    assert!(check("google.protobuf.NullValue.NULL_VALUE == 0").is_empty());
}

#[test]
fn a_rule_that_is_not_a_bool_is_an_error_naming_its_type() {
    for (rule, t) in [
        ("1 + 2", "int"),
        ("'healthy'", "string"),
        ("size(resource.items)", "int"),
        ("resource.items.filter(i, i.ok)", "list(dyn)"),
        ("resource.ok ? 1 : 0", "int"),
        ("type(1)", "type(int)"),
        ("list", "type(list(dyn))"),
        ("google.protobuf.Empty{}", "google.protobuf.Empty"),
        ("null", "null"),
        ("duration('1s')", "duration"),
    ] {
        assert_error(rule, "cel-not-boolean", &format!("type is '{t}'"));
    }
    // A BoolValue is "exactly" a bool for cel-go, and a dyn result may be a bool.
    assert!(check("google.protobuf.BoolValue{value: true}").is_empty());
    assert!(check("resource.spec.enabled").is_empty());
    assert!(check("google.protobuf.Value{bool_value: true}").is_empty());
}

#[test]
fn a_dyn_result_that_is_never_a_bool_is_a_warning() {
    for rule in [
        "-resource.x",
        "resource.a + resource.b",
        "resource.a + 1 > 0 ? resource.b * 2 : -resource.c",
    ] {
        let f = check(rule);
        assert_eq!(f.len(), 1, "{rule}: {f:?}");
        assert_eq!(
            (f[0].severity, f[0].code),
            (Severity::Warning, "cel-not-boolean")
        );
        assert!(
            f[0].message.contains("expected boolean result"),
            "{}",
            f[0].message
        );
    }
    // Either branch may be a bool.
    assert!(check("(resource.x < 5) ? resource.x : 5").is_empty());
    assert!(check("resource.items[0]").is_empty());
}

#[test]
fn cross_type_comparisons_are_disabled_until_a_comprehension() {
    assert_error("1 < 1.5", "cel-type", "'_<_' applied to '(int, double)'");
    assert!(
        check("resource.x < 1.5").is_empty(),
        "dyn matches less_double"
    );
    // cel-go's scoped checker environment drops the disabled overloads, and keeps them dropped.
    assert!(check("[1].all(x, true) && 1 < 1.5").is_empty());
    assert_error("1 < 1.5 && [1].all(x, true)", "cel-type", "(int, double)");
}

#[test]
fn literal_index_keys_must_be_plannable() {
    assert_error(
        "{null: false}[null]",
        "cel-type",
        "invalid qualifier type: types.Null",
    );
    assert_error(
        "{b'a': 1}[b'a'] == 1",
        "cel-type",
        "invalid qualifier type: types.Bytes",
    );
    assert_error("resource[null] == 1", "cel-type", "types.Null");
    assert!(check("{1.5: true}[1.5]").is_empty());
}

#[test]
fn macros_expand_as_cel_go() {
    assert_error(
        "has(resource)",
        "cel-syntax",
        "invalid argument to has() macro",
    );
    assert_error(
        "[1].all(x.y, true)",
        "cel-syntax",
        "argument must be a simple name",
    );
    assert_error(
        "[1].map(x.y, true)",
        "cel-syntax",
        "argument is not an identifier",
    );
    assert_error(
        "resource.a.exists(__result__, true)",
        "cel-syntax",
        "iteration variable overwrites accumulator variable",
    );
    assert_error(
        "[1].map(x, x, x)",
        "cel-type",
        "'_?_:_' applied to '(int, list(int), list(int))'",
    );
    assert_error(
        "resource.x.map(y, y > 0, y * 2)",
        "cel-not-boolean",
        "'list(int)'",
    );
    // Not macros: two-variable comprehensions and calls with other arities.
    assert_eq!(codes("[1, 2].all(i, v, v > 0)"), ["cel-undeclared"]);
    assert_eq!(codes("has()"), ["cel-undeclared"]);
}

#[test]
fn escaped_field_names_and_dotted_numbers_read_as_cel_go() {
    assert!(check("resource.`x-y` == 1").is_empty());
    assert!(check("{'k-1': 64}.`k-1` == 64").is_empty());
    assert_eq!(codes("`x` == 1"), ["cel-syntax"]);
}

#[test]
fn syntax_errors_carry_the_position_in_characters() {
    let f = check("(resource.status.phase == \"Running\"");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, "cel-syntax");
    assert_eq!(f[0].inner, Some((1, 36)));
    assert!(
        f[0].message.contains("missing ')' at '<EOF>'"),
        "{}",
        f[0].message
    );
    assert_eq!(check("\"ü\" == 'ü' &&")[0].inner, Some((1, 14)));
    assert_eq!(check("'üü' + 1")[0].inner, Some((1, 6)), "type errors too");
    assert_eq!(check("'ü'\n + 'ü' + 1")[0].inner, Some((2, 8)));
    for bad in [
        "resource.status.phase == ",
        "'unterminated",
        "a ===",
        "filter(c, )",
        "resource.?status",
        "self.true == 1",
    ] {
        assert_eq!(codes(bad), ["cel-syntax"], "{bad}");
    }
    assert_eq!(codes(""), ["cel-syntax"]);
    assert_error(
        "self.true == 1",
        "cel-syntax",
        "mismatched input 'true' expecting IDENTIFIER",
    );
    // The crate's complaints about nodes a syntax error left empty are not cel-go's.
    assert_error("--", "cel-syntax", "no viable alternative at input '-'");
}

#[test]
fn recursion_limits_are_cel_go_s() {
    let parens = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    assert!(check(&parens(249)).is_empty());
    for n in [250, 251, 252, 2_000] {
        let (code, message) = error(&parens(n));
        assert_eq!(code, "cel-syntax");
        assert!(
            message.ends_with("expression recursion limit exceeded: 250"),
            "{message}"
        );
    }
    assert_error(
        &format!("resource{} == 1", ".x".repeat(250)),
        "cel-syntax",
        "max recursion depth exceeded",
    );
}

#[test]
fn adversarial_rules_are_findings() {
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(codes(&deep), ["cel-too-large"]);
    let deep_small = format!("{}1{}", "(".repeat(4_000), ")".repeat(4_000));
    assert_eq!(codes(&deep_small), ["cel-syntax"]);
    assert_eq!(codes(&"a".repeat(1 << 20)), ["cel-too-large"]);
    for rule in [
        format!("resource{} == 1", ".a".repeat(8_000)),
        format!("{} > 0", vec!["1"; 5_000].join("+")),
        format!("{}1{}", "[".repeat(3_000), "]".repeat(3_000)),
        format!("{}true", "!".repeat(16_000)),
        format!("{}1", "-".repeat(16_000)),
        format!("{} true", "true &&".repeat(2_000)),
    ] {
        let f = check(&rule);
        assert!(f.iter().all(|f| !f.message.contains("Error(")), "{f:?}");
    }
}
