//! The input surfaces of this crate as functions over arbitrary bytes, with their invariants
//! checked: the entry points of the cargo-fuzz targets `scripts` and `schedules` (`fuzz/`) and of
//! the bounded runs in `tests/fuzz_bounded_*.rs`. Not used by the binaries.
//!
//! A violated invariant panics with a description, which is what fuzzers report; an input the
//! code rejects is not a violation.

pub mod generate;
pub mod schedules;
pub mod scripts;

use crate::validation::Finding;

/// How a language counts lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// Every `\n` ends a line (CEL, YAML).
    Lf,
    /// CR, LF, CRLF and LFCR each end a line (gopher-lua's scanner).
    Lua,
}

/// Whether 1-based `line` and `column` address a place in `text`: a byte of one of its lines, or
/// the end of a line or of the text. Columns are checked against the line's length in bytes, the
/// larger of the two units positions use (Lua counts bytes, CEL and YAML characters).
pub fn position_inside(text: &str, lines: Lines, line: usize, column: usize) -> bool {
    if line == 0 || column == 0 {
        return false;
    }
    line_lengths(text.as_bytes(), lines)
        .nth(line - 1)
        .is_some_and(|len| column <= len + 1)
}

/// The length in bytes of each line of `text`, without its line break.
fn line_lengths(text: &[u8], lines: Lines) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let rest = &text[at..];
        let end = match lines {
            Lines::Lf => rest.iter().position(|&b| b == b'\n'),
            Lines::Lua => rest.iter().position(|&b| b == b'\n' || b == b'\r'),
        };
        let Some(end) = end else {
            done = true;
            return Some(rest.len());
        };
        let pair = match (rest[end], rest.get(end + 1)) {
            (b'\n', Some(b'\r')) | (b'\r', Some(b'\n')) => lines == Lines::Lua,
            _ => false,
        };
        at += end + 1 + usize::from(pair);
        Some(end)
    })
}

/// Panics unless every finding's position inside its script or rule lies in `text`.
pub fn assert_inner_positions(text: &str, lines: Lines, findings: &[&Finding]) {
    for f in findings {
        if let Some((line, column)) = f.inner {
            assert!(
                position_inside(text, lines, line, column),
                "{} points at line {line}, column {column}, outside its text {text:?}",
                f
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::position_inside;

    #[test]
    fn positions_inside_and_outside() {
        use super::Lines::{Lf, Lua};
        let text = "ab\ncd√\n";
        assert!(position_inside(text, Lf, 1, 1));
        assert!(position_inside(text, Lf, 1, 3), "end of line 1");
        assert!(!position_inside(text, Lf, 1, 4));
        assert!(position_inside(text, Lf, 2, 6), "√ is 3 bytes");
        assert!(position_inside(text, Lf, 3, 1), "end of the text");
        assert!(!position_inside(text, Lf, 3, 2));
        assert!(!position_inside(text, Lf, 4, 1));
        assert!(!position_inside(text, Lf, 0, 1));
        assert!(!position_inside(text, Lf, 1, 0));
        assert!(position_inside("", Lf, 1, 1));

        let text = "a\r\nbb\rccc\n\rd";
        assert!(position_inside(text, Lua, 2, 3));
        assert!(position_inside(text, Lua, 3, 4));
        assert!(position_inside(text, Lua, 4, 2));
        assert!(!position_inside(text, Lua, 5, 1));
        assert!(position_inside(text, Lf, 2, 7), "a CR alone ends no line");
        assert!(!position_inside(text, Lua, 2, 7), "in Lua it does");
        assert!(!position_inside(text, Lf, 4, 1));
    }
}
