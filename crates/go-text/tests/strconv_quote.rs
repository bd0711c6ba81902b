//! `strconv.Quote` against Go's own table: `quotetests` of `src/strconv/quote_test.go`
//! (golang/go), the `out` column (what `Quote` returns). Go string literals are written as Rust
//! byte strings so that the invalid-UTF-8 row stays byte for byte.

use go_text::strconv::{quote, quote_bytes};

/// `quotetests`: (in, out).
const QUOTETESTS: &[(&[u8], &str)] = &[
    (b"\x07\x08\x0c\r\n\t\x0b", r#""\a\b\f\r\n\t\v""#),
    (b"\\", r#""\\""#),
    (b"abc\xffdef", r#""abc\xffdef""#),
    ("\u{263a}".as_bytes(), "\"☺\""),
    ("\u{10ffff}".as_bytes(), r#""\U0010ffff""#),
    (b"\x04", r#""\x04""#),
    // Some non-printable but graphic runes.
    (
        "!\u{a0}!\u{2000}!\u{3000}!".as_bytes(),
        r#""!\u00a0!\u2000!\u3000!""#,
    ),
];

#[test]
fn quote_matches_go_quotetests() {
    for (input, want) in QUOTETESTS {
        assert_eq!(quote_bytes(input), *want, "Quote({input:?})");
        if let Ok(s) = std::str::from_utf8(input) {
            assert_eq!(quote(s), *want, "Quote({s:?})");
        }
    }
}
