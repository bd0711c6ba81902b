//! encoding/json string and float encoding against Go's own tests in
//! `src/encoding/json/encode_test.go` (golang/go, Go ≥ 1.22, where `\b` and `\f` got their short
//! escapes): `encodeStringTests` (`TestEncodeString`), the string of `TestHTMLEscape`, and the
//! float rules `TestMarshalFloat` checks (`badFloatREs`: no exponent with a leading zero, no
//! exponent for 1e-6 ≤ |f| < 1e21; -0 must read back as -0).

use go_text::json::{format_float, quote};

/// `encodeStringTests`: (in, out).
const ENCODE_STRING_TESTS: &[(&str, &str)] = &[
    ("\x00", r#""\u0000""#),
    ("\x01", r#""\u0001""#),
    ("\x02", r#""\u0002""#),
    ("\x03", r#""\u0003""#),
    ("\x04", r#""\u0004""#),
    ("\x05", r#""\u0005""#),
    ("\x06", r#""\u0006""#),
    ("\x07", r#""\u0007""#),
    ("\x08", r#""\b""#),
    ("\x09", r#""\t""#),
    ("\x0a", r#""\n""#),
    ("\x0b", r#""\u000b""#),
    ("\x0c", r#""\f""#),
    ("\x0d", r#""\r""#),
    ("\x0e", r#""\u000e""#),
    ("\x0f", r#""\u000f""#),
    ("\x10", r#""\u0010""#),
    ("\x11", r#""\u0011""#),
    ("\x12", r#""\u0012""#),
    ("\x13", r#""\u0013""#),
    ("\x14", r#""\u0014""#),
    ("\x15", r#""\u0015""#),
    ("\x16", r#""\u0016""#),
    ("\x17", r#""\u0017""#),
    ("\x18", r#""\u0018""#),
    ("\x19", r#""\u0019""#),
    ("\x1a", r#""\u001a""#),
    ("\x1b", r#""\u001b""#),
    ("\x1c", r#""\u001c""#),
    ("\x1d", r#""\u001d""#),
    ("\x1e", r#""\u001e""#),
    ("\x1f", r#""\u001f""#),
];

#[test]
fn strings_encode_as_go_encode_string_tests() {
    for (input, want) in ENCODE_STRING_TESTS {
        assert_eq!(quote(input), *want, "Marshal({input:?})");
    }
}

#[test]
fn html_characters_and_line_separators_are_escaped_as_test_html_escape() {
    assert_eq!(
        quote("<html>foo &\u{2028} \u{2029}</html>"),
        r#""\u003chtml\u003efoo \u0026\u2028 \u2029\u003c/html\u003e""#
    );
}

#[test]
fn floats_encode_as_test_marshal_float_requires() {
    let rows: &[(f64, &str)] = &[
        (1e-7, "1e-7"),
        (1.234e-10, "1.234e-10"),
        (1e-6, "0.000001"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (-0.0, "-0"),
        (0.0, "0"),
        (18446744073709551615.0, "18446744073709552000"),
    ];
    for (f, want) in rows {
        assert_eq!(format_float(*f).as_deref(), Some(*want), "Marshal({f:e})");
    }
    // TestUnsupportedValues.
    for f in [f64::NAN, f64::NEG_INFINITY, f64::INFINITY] {
        assert_eq!(format_float(f), None);
    }
}
