//! Errors after gopher-lua's first syntax error, where they cannot be consequences of it.
//!
//! The script is scanned once more, carrying on after lexical errors, and cut before every
//! statement keyword that starts a line at column 1 (`function <name>`, `local`, `if`, `for`,
//! `while`, `repeat`, `do`, `goto`, `::`): in the usual layout these start top-level
//! statements. Each piece is then judged on its own:
//! - the piece holding the first error is skipped;
//! - a piece after it reports its first syntax error, unless that error is at the piece's end
//!   or at `end`/`else`/`elseif`/`until` (the cut may have split a block there, so such an
//!   error could be the cut's doing);
//! - any piece that parses, before or after, reports the compile errors inside its functions
//!   (a function is compiled the same wherever it stands); errors of the piece's own top
//!   level are not reported, since they may depend on the code around it (`break` in a loop).

use super::compile::{self, Located};
use super::lexer::{LexError, Scanned, Scanner, Tok, Token, EOF_LINE};
use super::parser::{parse, Failure, SyntaxError, TokenSource};

/// A later error: a syntax error, or a compile error (line only).
#[derive(Debug, PartialEq)]
pub enum Later {
    Syntax(SyntaxError),
    Compile(compile::CompileError),
}

enum Entry<'a> {
    Token(Scanned<'a>, (i32, i32)),
    Error(LexError),
}

/// Every token of the script, with lexical errors in place; scanning resumes after each.
fn tokens(src: &[u8]) -> Vec<Entry<'_>> {
    let mut scanner = Scanner::new(src);
    let mut out = Vec::new();
    loop {
        match scanner.scan() {
            Ok(s) if s.token.kind == Tok::End => return out,
            Ok(s) => out.push(Entry::Token(s, scanner.position())),
            Err(e) => {
                let at_end = e.line == EOF_LINE;
                out.push(Entry::Error(e));
                if at_end {
                    return out;
                }
            }
        }
    }
}

fn starts_piece(entries: &[Entry<'_>], i: usize) -> bool {
    let Entry::Token(s, _) = &entries[i] else {
        return false;
    };
    if s.token.column != 1 {
        return false;
    }
    match s.token.kind {
        Tok::Local | Tok::If | Tok::For | Tok::While | Tok::Repeat | Tok::Do | Tok::Goto => true,
        Tok::DoubleColon => true,
        // `function` also starts anonymous functions, which can continue a line above.
        Tok::Function => matches!(
            entries.get(i + 1),
            Some(Entry::Token(next, _)) if next.token.kind == Tok::Ident
        ),
        _ => false,
    }
}

/// Feeds one piece's tokens to the parser.
struct Piece<'e, 'a> {
    entries: &'e [Entry<'a>],
    next: usize,
    position: (i32, i32),
    last: Option<Tok>,
    at_end: bool,
}

impl<'a> TokenSource<'a> for Piece<'_, 'a> {
    fn scan(&mut self) -> Result<Scanned<'a>, LexError> {
        let Some(entry) = self.entries.get(self.next) else {
            self.at_end = true;
            self.position = (EOF_LINE, 0);
            return Ok(Scanned {
                token: Token {
                    kind: Tok::End,
                    text: Default::default(),
                    line: EOF_LINE,
                    column: 0,
                },
                newline_before: false,
            });
        };
        self.next += 1;
        match entry {
            Entry::Token(s, end) => {
                self.position = *end;
                self.last = Some(s.token.kind);
                Ok(s.clone())
            }
            Entry::Error(e) => Err(e.clone()),
        }
    }

    fn position(&self) -> (i32, i32) {
        self.position
    }
}

fn line_of(entry: &Entry<'_>) -> i32 {
    match entry {
        Entry::Token(s, _) => s.token.line,
        Entry::Error(e) => e.line,
    }
}

/// Errors independent of `first`, in script order.
pub fn later_errors(src: &[u8], first: &SyntaxError, max_depth: usize) -> Vec<Later> {
    if first.line == EOF_LINE {
        return Vec::new();
    }
    let entries = tokens(src);
    let mut starts: Vec<usize> = (0..entries.len())
        .filter(|&i| starts_piece(&entries, i))
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut out = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(entries.len());
        let piece = &entries[start..end];
        let Some(first_entry) = piece.first() else {
            continue;
        };
        let last_line = piece.last().map_or(0, line_of);
        let (from, to) = (line_of(first_entry), last_line);
        let holds_first = from <= first.line && (first.line <= to || k + 1 == starts.len());
        if holds_first {
            continue;
        }
        let after = from > first.line;
        let mut source = Piece {
            entries: piece,
            next: 0,
            position: (0, 0),
            last: None,
            at_end: false,
        };
        match parse(&mut source, max_depth) {
            Ok(chunk) => out.extend(
                compile::compile(&chunk)
                    .into_iter()
                    .filter(|l: &Located| l.function_depth > 0)
                    .map(|l| Later::Compile(l.error)),
            ),
            Err(Failure::Syntax(e)) if after => {
                let cut_here = source.at_end
                    || matches!(
                        source.last,
                        Some(Tok::EndKw | Tok::Else | Tok::ElseIf | Tok::Until)
                    );
                let lexical = matches!(
                    piece.get(source.next.saturating_sub(1)),
                    Some(Entry::Error(_))
                );
                if lexical || !cut_here {
                    out.push(Later::Syntax(e));
                }
            }
            Err(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(src: &str) -> SyntaxError {
        match parse(&mut Scanner::new(src.as_bytes()), 200) {
            Err(Failure::Syntax(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    fn later(src: &str) -> Vec<String> {
        later_errors(src.as_bytes(), &first(src), 200)
            .into_iter()
            .map(|l| match l {
                Later::Syntax(e) => format!(
                    "{}:{} {} {}",
                    e.line,
                    e.column,
                    String::from_utf8_lossy(&e.near),
                    e.message
                ),
                Later::Compile(e) => format!("{} {}", e.line, e.message),
            })
            .collect()
    }

    #[test]
    fn reports_errors_in_later_top_level_functions() {
        let src = "function a()\n  x = = 1\nend\nfunction b()\n  y = = 2\nend\n";
        assert_eq!(later(src), ["5:7 = syntax error"]);
    }

    #[test]
    fn stays_quiet_where_the_cut_may_have_caused_the_error() {
        // A column-1 `local` inside a broken function: its piece ends with that function's
        // `end`, which is not an error of its own.
        let src = "function a()\n  x = = 1\nlocal y = 2\nend\n";
        assert!(later(src).is_empty());
        // A missing `end` is found at the end of the script: nothing after it.
        let src = "function a()\n  if x then\nend\nfunction b() return 1 end\n";
        assert!(later(src).is_empty());
        // An anonymous function at column 1 continues the line above.
        let src = "x = = 1\nlocal f =\nfunction() return 1 end\n";
        assert!(later(src).is_empty());
    }

    #[test]
    fn reports_compile_errors_in_functions_before_and_after() {
        let src =
            "local function a() break end\nlocal x = = 1\nlocal function b() goto nowhere end\n";
        assert_eq!(
            later(src),
            [
                "1 no loop to break",
                "3 no visible label 'nowhere' for <goto> at line 3"
            ]
        );
    }

    #[test]
    fn lexical_errors_in_later_pieces_are_their_own() {
        let src = "x = = 1\nlocal s = 'unterminated\nlocal t = 1 ! 2\n";
        assert_eq!(
            later(src),
            [
                "3:0 unterminated unterminated string",
                "3:13 ! Invalid token"
            ]
        );
    }
}
