//! `strconv.FormatFloat(f, fmt, -1, 64)` against Go's own table: the `ftoatests` rows of
//! `src/strconv/ftoa_test.go` (golang/go) with precision -1 and format 'e', 'f' or 'g' (the 'b'
//! and 'x' rows are formats this crate does not offer).

use go_text::strconv::{format_float, FloatFormat};

const BELOW1E23: f64 = 99999999999999974834176.0;
const ABOVE1E23: f64 = 100000000000000008388608.0;

fn fdiv(a: f64, b: f64) -> f64 {
    a / b
}

#[test]
// Go's rows keep their literals as Go wrote them, more digits than an f64 holds included.
#[allow(clippy::excessive_precision)]
fn shortest_formatting_matches_go_ftoatests() {
    use FloatFormat::{E, F, G};
    let rows: &[(f64, FloatFormat, &str)] = &[
        (1.0, G, "1"),
        (20.0, G, "20"),
        (1234567.8, G, "1.2345678e+06"),
        (200000.0, G, "200000"),
        (2000000.0, G, "2e+06"),
        (0.0, G, "0"),
        (-1.0, G, "-1"),
        (12.0, G, "12"),
        (123456700.0, G, "1.234567e+08"),
        (1e23, E, "1e+23"),
        (1e23, F, "100000000000000000000000"),
        (1e23, G, "1e+23"),
        (BELOW1E23, E, "9.999999999999997e+22"),
        (BELOW1E23, F, "99999999999999970000000"),
        (BELOW1E23, G, "9.999999999999997e+22"),
        (ABOVE1E23, E, "1.0000000000000001e+23"),
        (ABOVE1E23, F, "100000000000000010000000"),
        (ABOVE1E23, G, "1.0000000000000001e+23"),
        (fdiv(5e-304, 1e20), G, "5e-324"),
        (fdiv(-5e-304, 1e20), G, "-5e-324"),
        (32.0, G, "32"),
        (f64::NAN, G, "NaN"),
        (-f64::NAN, G, "NaN"),
        (f64::INFINITY, G, "+Inf"),
        (f64::NEG_INFINITY, G, "-Inf"),
        (-f64::INFINITY, G, "-Inf"),
        (2.2250738585072012e-308, G, "2.2250738585072014e-308"),
        (2.2250738585072011e-308, G, "2.225073858507201e-308"),
        (383260575764816448.0, G, "3.8326057576481645e+17"),
    ];
    for (f, fmt, want) in rows {
        assert_eq!(
            format_float(*f, *fmt),
            *want,
            "FormatFloat({f:e}, {fmt:?}, -1, 64)"
        );
    }
}
