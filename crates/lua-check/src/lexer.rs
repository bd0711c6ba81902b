//! Tokens, as gopher-lua v1.1.2's `parse/lexer.go` scans them.
//!
//! The port keeps the Go scanner's quirks, because they decide verdicts and messages:
//! - it reads bytes, so a column counts bytes and any byte above 127 is an "Invalid token";
//! - only space, tab, CR and LF are white space (`\f` and `\v` are invalid tokens);
//! - `0x` must be followed by a hex digit, and there are no hex fractions or `p` exponents
//!   (`0x1p4` is the number `0x1` and then the name `p4`);
//! - an exponent takes the next byte whatever it is (`1e`, `1e+` and `1ee5` are numbers);
//! - a leading `#!` line is not skipped (only `LoadFile` skips it, `DoString` does not): its
//!   `#` is the length operator, which the parser then rejects;
//! - escapes never fail (`\q` is `q`, `\999` wraps to a byte);
//! - an error is reported at the scanner's position after the bytes it consumed, with the text
//!   read so far as the "near" token; once the end of input has been read the position is EOF.

use std::borrow::Cow;

/// Token kinds, declared in the order goyacc numbers `parser.go.y`'s terminals (the `%token`
/// lines, then the precedence lines, then literals in the order the rules first use them).
/// The order matters: it breaks ties when a parser state chooses its default reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Tok {
    End,
    ErrorToken,
    Unknown,
    And,
    Break,
    Do,
    Else,
    ElseIf,
    EndKw,
    False,
    For,
    Function,
    If,
    In,
    Local,
    Nil,
    Not,
    Or,
    Return,
    Repeat,
    Then,
    True,
    Until,
    While,
    Goto,
    Eq,
    Ne,
    Le,
    Ge,
    Concat,
    Dots,
    DoubleColon,
    Ident,
    Number,
    String,
    LBrace,
    LParen,
    Gt,
    Lt,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Unary,
    Caret,
    Semi,
    Assign,
    Comma,
    Colon,
    Dot,
    LBracket,
    RBracket,
    Hash,
    RParen,
    RBrace,
}

/// Number of token kinds (terminals of the grammar).
pub const TOKEN_KINDS: usize = Tok::RBrace as usize + 1;

impl Tok {
    pub const ALL: [Tok; TOKEN_KINDS] = [
        Tok::End,
        Tok::ErrorToken,
        Tok::Unknown,
        Tok::And,
        Tok::Break,
        Tok::Do,
        Tok::Else,
        Tok::ElseIf,
        Tok::EndKw,
        Tok::False,
        Tok::For,
        Tok::Function,
        Tok::If,
        Tok::In,
        Tok::Local,
        Tok::Nil,
        Tok::Not,
        Tok::Or,
        Tok::Return,
        Tok::Repeat,
        Tok::Then,
        Tok::True,
        Tok::Until,
        Tok::While,
        Tok::Goto,
        Tok::Eq,
        Tok::Ne,
        Tok::Le,
        Tok::Ge,
        Tok::Concat,
        Tok::Dots,
        Tok::DoubleColon,
        Tok::Ident,
        Tok::Number,
        Tok::String,
        Tok::LBrace,
        Tok::LParen,
        Tok::Gt,
        Tok::Lt,
        Tok::Plus,
        Tok::Minus,
        Tok::Star,
        Tok::Slash,
        Tok::Percent,
        Tok::Unary,
        Tok::Caret,
        Tok::Semi,
        Tok::Assign,
        Tok::Comma,
        Tok::Colon,
        Tok::Dot,
        Tok::LBracket,
        Tok::RBracket,
        Tok::Hash,
        Tok::RParen,
        Tok::RBrace,
    ];
}

/// The scanner's line once it has read past the last byte (Go's `EOF`, -1).
pub const EOF_LINE: i32 = -1;
const EOF: i32 = -1;

#[derive(Clone, Debug, PartialEq)]
pub struct Token<'a> {
    pub kind: Tok,
    /// gopher-lua's `Token.Str`: a name's or numeral's text, a string's decoded contents.
    pub text: Cow<'a, [u8]>,
    /// Where the token's first byte is (`EOF_LINE` for the end of input).
    pub line: i32,
    pub column: i32,
}

/// A scan error: `near` is the text read so far, the position is the scanner's afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub line: i32,
    pub column: i32,
    pub near: Vec<u8>,
    pub message: &'static str,
}

/// One scanned token and whether a line break came right before it (for gopher-lua's
/// "ambiguous syntax" check, which looks at `(` after `)`).
#[derive(Clone, Debug)]
pub struct Scanned<'a> {
    pub token: Token<'a>,
    pub newline_before: bool,
}

const SPACE_TAB: u64 = 1 << b'\t' | 1 << b' ';
const WHITE_SPACE: u64 = SPACE_TAB | 1 << b'\n' | 1 << b'\r';

pub struct Scanner<'a> {
    src: &'a [u8],
    at: usize,
    line: i32,
    column: i32,
    buf: Vec<u8>,
}

fn is_decimal(ch: i32) -> bool {
    (b'0' as i32..=b'9' as i32).contains(&ch)
}

fn is_ident(ch: i32, pos: usize) -> bool {
    ch == b'_' as i32
        || (b'A' as i32..=b'Z' as i32).contains(&ch)
        || (b'a' as i32..=b'z' as i32).contains(&ch)
        || (is_decimal(ch) && pos > 0)
}

fn is_hex_digit(ch: i32) -> bool {
    is_decimal(ch)
        || (b'a' as i32..=b'f' as i32).contains(&ch)
        || (b'A' as i32..=b'F' as i32).contains(&ch)
}

/// Go's `byte(c)` of an int: the end-of-input marker -1 becomes 0xff.
fn byte_of(ch: i32) -> u8 {
    ch as u8
}

fn keyword(name: &[u8]) -> Option<Tok> {
    Some(match name {
        b"and" => Tok::And,
        b"break" => Tok::Break,
        b"do" => Tok::Do,
        b"else" => Tok::Else,
        b"elseif" => Tok::ElseIf,
        b"end" => Tok::EndKw,
        b"false" => Tok::False,
        b"for" => Tok::For,
        b"function" => Tok::Function,
        b"if" => Tok::If,
        b"in" => Tok::In,
        b"local" => Tok::Local,
        b"nil" => Tok::Nil,
        b"not" => Tok::Not,
        b"or" => Tok::Or,
        b"return" => Tok::Return,
        b"repeat" => Tok::Repeat,
        b"then" => Tok::Then,
        b"true" => Tok::True,
        b"until" => Tok::Until,
        b"while" => Tok::While,
        b"goto" => Tok::Goto,
        _ => return None,
    })
}

impl<'a> Scanner<'a> {
    pub fn new(src: &'a [u8]) -> Self {
        Scanner {
            src,
            at: 0,
            line: 1,
            column: 0,
            buf: Vec::new(),
        }
    }

    fn error(&self, near: Vec<u8>, message: &'static str) -> LexError {
        LexError {
            line: self.line,
            column: self.column,
            near,
            message,
        }
    }

    fn peek(&self) -> i32 {
        self.src.get(self.at).map_or(EOF, |&b| i32::from(b))
    }

    fn newline(&mut self, ch: i32) {
        self.line += 1;
        self.column = 0;
        let next = self.peek();
        if (ch == b'\n' as i32 && next == b'\r' as i32)
            || (ch == b'\r' as i32 && next == b'\n' as i32)
        {
            self.at += 1;
        }
    }

    /// The next byte; CR, LF, CRLF and LFCR all read as one LF.
    fn next(&mut self) -> i32 {
        let Some(&b) = self.src.get(self.at) else {
            self.line = EOF_LINE;
            self.column = 0;
            return EOF;
        };
        self.at += 1;
        let ch = i32::from(b);
        if b == b'\n' || b == b'\r' {
            self.newline(ch);
            return i32::from(b'\n');
        }
        self.column += 1;
        ch
    }

    fn skip_white_space(&mut self, mask: u64) -> i32 {
        let mut ch = self.next();
        while (0..64).contains(&ch) && mask & (1u64 << ch) != 0 {
            ch = self.next();
        }
        ch
    }

    fn skip_comment(&mut self, mut ch: i32) -> Result<(), LexError> {
        if self.peek() == i32::from(b'[') {
            ch = self.next();
            if self.peek() == i32::from(b'[') || self.peek() == i32::from(b'=') {
                let first = self.next();
                let mut buf = Vec::new();
                if self.long_bracket(first, &mut buf).is_err() {
                    return Err(self.error(buf, "invalid multiline comment"));
                }
                return Ok(());
            }
        }
        while ch != i32::from(b'\n') && ch != i32::from(b'\r') && ch >= 0 {
            ch = self.next();
        }
        Ok(())
    }

    fn scan_decimal(&mut self, ch: i32) {
        self.buf.push(byte_of(ch));
        while is_decimal(self.peek()) {
            let c = self.next();
            self.buf.push(byte_of(c));
        }
    }

    fn scan_number(&mut self, mut ch: i32) -> Result<(), LexError> {
        if ch == i32::from(b'0') {
            let p = self.peek();
            if p == i32::from(b'x') || p == i32::from(b'X') {
                self.buf.push(b'0');
                let x = self.next();
                self.buf.push(byte_of(x));
                let mut has_value = false;
                while is_hex_digit(self.peek()) {
                    let c = self.next();
                    self.buf.push(byte_of(c));
                    has_value = true;
                }
                if !has_value {
                    return Err(self.error(self.buf.clone(), "illegal hexadecimal number"));
                }
                return Ok(());
            } else if p != i32::from(b'.') && is_decimal(p) {
                ch = self.next();
            }
        }
        self.scan_decimal(ch);
        if self.peek() == i32::from(b'.') {
            let c = self.next();
            self.scan_decimal(c);
        }
        let e = self.peek();
        if e == i32::from(b'e') || e == i32::from(b'E') {
            let c = self.next();
            self.buf.push(byte_of(c));
            let sign = self.peek();
            if sign == i32::from(b'-') || sign == i32::from(b'+') {
                let c = self.next();
                self.buf.push(byte_of(c));
            }
            // Whatever follows the exponent marker is taken, digit or not.
            let c = self.next();
            self.scan_decimal(c);
        }
        Ok(())
    }

    fn scan_string(&mut self, quote: i32) -> Result<(), LexError> {
        let mut ch = self.next();
        while ch != quote {
            if ch == i32::from(b'\n') || ch == i32::from(b'\r') || ch < 0 {
                return Err(self.error(self.buf.clone(), "unterminated string"));
            }
            if ch == i32::from(b'\\') {
                self.scan_escape();
            } else {
                self.buf.push(byte_of(ch));
            }
            ch = self.next();
        }
        Ok(())
    }

    fn scan_escape(&mut self) {
        let ch = self.next();
        let decoded = match u8::try_from(ch) {
            Ok(b'a') => 0x07,
            Ok(b'b') => 0x08,
            Ok(b'f') => 0x0c,
            Ok(b'n') | Ok(b'\n') => b'\n',
            Ok(b'r') => b'\r',
            Ok(b't') => b'\t',
            Ok(b'v') => 0x0b,
            Ok(b'0'..=b'9') => {
                let mut value = ch - i32::from(b'0');
                for _ in 0..2 {
                    if !is_decimal(self.peek()) {
                        break;
                    }
                    value = value * 10 + (self.next() - i32::from(b'0'));
                }
                byte_of(value)
            }
            _ => byte_of(ch),
        };
        self.buf.push(decoded);
    }

    fn count_sep(&mut self, mut ch: i32) -> (usize, i32) {
        let mut count = 0;
        while ch == i32::from(b'=') {
            count += 1;
            ch = self.next();
        }
        (count, ch)
    }

    /// A long bracket's body; `ch` is the byte after its first `[`.
    fn long_bracket(&mut self, ch: i32, buf: &mut Vec<u8>) -> Result<(), LexError> {
        let (level, mut ch) = self.count_sep(ch);
        if ch != i32::from(b'[') {
            let near = char::from_u32(ch as u32).unwrap_or(char::REPLACEMENT_CHARACTER);
            return Err(self.error(near.to_string().into_bytes(), "invalid multiline string"));
        }
        ch = self.next();
        if ch == i32::from(b'\n') || ch == i32::from(b'\r') {
            ch = self.next();
        }
        loop {
            if ch < 0 {
                return Err(self.error(buf.clone(), "unterminated multiline string"));
            }
            if ch == i32::from(b']') {
                let after = self.next();
                let (closing, after) = self.count_sep(after);
                if closing == level && after == i32::from(b']') {
                    return Ok(());
                }
                buf.push(b']');
                buf.extend(std::iter::repeat_n(b'=', closing));
                ch = after;
                continue;
            }
            buf.push(byte_of(ch));
            ch = self.next();
        }
    }

    fn text_of(&mut self, exact: &'a [u8]) -> Cow<'a, [u8]> {
        if self.buf == exact {
            Cow::Borrowed(exact)
        } else {
            Cow::Owned(std::mem::take(&mut self.buf))
        }
    }

    /// The next token (gopher-lua's `Scanner.Scan`).
    pub fn scan(&mut self) -> Result<Scanned<'a>, LexError> {
        loop {
            let mut newline_before = false;
            let mut ch = self.skip_white_space(SPACE_TAB);
            if ch == i32::from(b'\n') || ch == i32::from(b'\r') {
                newline_before = true;
                ch = self.skip_white_space(WHITE_SPACE);
            }
            let (line, column) = (self.line, self.column);
            let start = self.at.saturating_sub(1);
            self.buf.clear();
            let token = |kind, text| Token {
                kind,
                text,
                line,
                column,
            };
            let single = |s: &Self| Cow::Borrowed(&s.src[start..s.at]);
            let Ok(b) = u8::try_from(ch) else {
                return Ok(Scanned {
                    token: token(Tok::End, Cow::Borrowed(&[][..])),
                    newline_before,
                });
            };
            let scanned = match b {
                b'_' | b'A'..=b'Z' | b'a'..=b'z' => {
                    while is_ident(self.peek(), 1) {
                        self.next();
                    }
                    let name = &self.src[start..self.at];
                    token(keyword(name).unwrap_or(Tok::Ident), Cow::Borrowed(name))
                }
                b'0'..=b'9' => {
                    self.scan_number(ch)?;
                    let text = self.text_of(&self.src[start..self.at]);
                    token(Tok::Number, text)
                }
                b'-' => {
                    if self.peek() == i32::from(b'-') {
                        let c = self.next();
                        self.skip_comment(c)?;
                        continue;
                    }
                    token(Tok::Minus, single(self))
                }
                b'"' | b'\'' => {
                    self.scan_string(ch)?;
                    let inner = &self.src[start + 1..self.at - 1];
                    let text = self.text_of(inner);
                    token(Tok::String, text)
                }
                b'[' => {
                    let p = self.peek();
                    if p == i32::from(b'[') || p == i32::from(b'=') {
                        let first = self.next();
                        let mut buf = std::mem::take(&mut self.buf);
                        self.long_bracket(first, &mut buf)?;
                        token(Tok::String, Cow::Owned(buf))
                    } else {
                        token(Tok::LBracket, single(self))
                    }
                }
                b'=' | b'~' | b'<' | b'>' => {
                    if self.peek() == i32::from(b'=') {
                        self.next();
                        let kind = match b {
                            b'=' => Tok::Eq,
                            b'~' => Tok::Ne,
                            b'<' => Tok::Le,
                            _ => Tok::Ge,
                        };
                        token(kind, single(self))
                    } else {
                        let kind = match b {
                            b'=' => Tok::Assign,
                            b'<' => Tok::Lt,
                            b'>' => Tok::Gt,
                            _ => return Err(self.error(b"~".to_vec(), "Invalid '~' token")),
                        };
                        token(kind, single(self))
                    }
                }
                b'.' => {
                    let p = self.peek();
                    if is_decimal(p) {
                        self.scan_number(ch)?;
                        let text = self.text_of(&self.src[start..self.at]);
                        token(Tok::Number, text)
                    } else if p == i32::from(b'.') {
                        self.next();
                        let kind = if self.peek() == i32::from(b'.') {
                            self.next();
                            Tok::Dots
                        } else {
                            Tok::Concat
                        };
                        token(kind, single(self))
                    } else {
                        // gopher-lua gives a lone `.` an empty text.
                        token(Tok::Dot, Cow::Borrowed(&[][..]))
                    }
                }
                b':' => {
                    if self.peek() == i32::from(b':') {
                        self.next();
                        token(Tok::DoubleColon, single(self))
                    } else {
                        token(Tok::Colon, single(self))
                    }
                }
                b'+' | b'*' | b'/' | b'%' | b'^' | b'#' | b'(' | b')' | b'{' | b'}' | b']'
                | b';' | b',' => {
                    let kind = match b {
                        b'+' => Tok::Plus,
                        b'*' => Tok::Star,
                        b'/' => Tok::Slash,
                        b'%' => Tok::Percent,
                        b'^' => Tok::Caret,
                        b'#' => Tok::Hash,
                        b'(' => Tok::LParen,
                        b')' => Tok::RParen,
                        b'{' => Tok::LBrace,
                        b'}' => Tok::RBrace,
                        b']' => Tok::RBracket,
                        b';' => Tok::Semi,
                        _ => Tok::Comma,
                    };
                    token(kind, single(self))
                }
                _ => return Err(self.error(vec![b], "Invalid token")),
            };
            return Ok(Scanned {
                token: scanned,
                newline_before,
            });
        }
    }

    /// Where the scanner is: the line and column of the last byte it consumed.
    pub fn position(&self) -> (i32, i32) {
        (self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(src: &str) -> Result<Vec<(Tok, String, i32, i32)>, LexError> {
        let mut s = Scanner::new(src.as_bytes());
        let mut out = Vec::new();
        loop {
            let t = s.scan()?.token;
            if t.kind == Tok::End {
                return Ok(out);
            }
            out.push((
                t.kind,
                String::from_utf8_lossy(&t.text).into_owned(),
                t.line,
                t.column,
            ));
        }
    }

    fn error(src: &str) -> (i32, i32, String, &'static str) {
        let e = tokens(src).expect_err(src);
        (
            e.line,
            e.column,
            String::from_utf8_lossy(&e.near).into(),
            e.message,
        )
    }

    #[test]
    fn hex_numbers_take_no_fraction_or_binary_exponent() {
        assert_eq!(
            error("a = 0x.8"),
            (1, 6, "0x".into(), "illegal hexadecimal number")
        );
        let t = tokens("a = 0x1p4").unwrap();
        assert_eq!(t[2].1, "0x1");
        assert_eq!((t[3].0, t[3].1.as_str()), (Tok::Ident, "p4"));
        let t = tokens("a = 0xA.8p1").unwrap();
        assert_eq!(t[3].1, ".8");
    }

    #[test]
    fn an_exponent_takes_the_next_byte() {
        assert_eq!(tokens("a = 1e").unwrap()[2].1, "1e\u{fffd}");
        assert_eq!(tokens("a = 1e+ b").unwrap()[2].1, "1e+ ");
        assert_eq!(tokens("a = 1ee5").unwrap()[2].1, "1ee5");
        assert_eq!(tokens("x = 012").unwrap()[2].1, "12");
    }

    #[test]
    fn positions_count_bytes_from_one() {
        let t = tokens("local x =\n  \"héllo\" .. y").unwrap();
        assert_eq!(t[0], (Tok::Local, "local".into(), 1, 1));
        assert_eq!(t[3], (Tok::String, "héllo".into(), 2, 3));
        assert_eq!(t[4].3, 12);
    }

    #[test]
    fn errors_carry_the_text_read_so_far() {
        // `#` is a token of its own; the lexer alone fails on the `!` after it.
        assert_eq!(error("#!/usr/bin/lua"), (1, 2, "!".into(), "Invalid token"));
        assert_eq!(error("x = 1 != 2"), (1, 7, "!".into(), "Invalid token"));
        assert_eq!(
            error("x = \"abc\ny"),
            (2, 0, "abc".into(), "unterminated string")
        );
        assert_eq!(
            error("x = 'abc"),
            (-1, 0, "abc".into(), "unterminated string")
        );
        assert_eq!(error("x = ~1"), (1, 5, "~".into(), "Invalid '~' token"));
        assert_eq!(
            error("x = [=x"),
            (1, 7, "x".into(), "invalid multiline string")
        );
        assert_eq!(
            error("x = [[abc"),
            (-1, 0, "abc".into(), "unterminated multiline string")
        );
        assert_eq!(
            error("--[[ never closed"),
            (-1, 0, " never closed".into(), "invalid multiline comment")
        );
        assert_eq!(error("x = `y`"), (1, 5, "`".into(), "Invalid token"));
        assert_eq!(error("x = \u{c}"), (1, 5, "\u{c}".into(), "Invalid token"));
    }

    #[test]
    fn strings_decode_escapes_and_long_brackets() {
        let mut s = Scanner::new(b"\"a\\tb\\65\\999\\q\" [==[\n]]x]=]]==] [[\r\nl1\r\nl2]]");
        let t = s.scan().unwrap().token;
        assert_eq!(&*t.text, b"a\tbA\xe7q");
        let t = s.scan().unwrap().token;
        assert_eq!(&*t.text, b"]]x]=]");
        let t = s.scan().unwrap().token;
        assert_eq!(&*t.text, b"l1\nl2");
        assert_eq!(s.scan().unwrap().token.kind, Tok::End);
    }

    #[test]
    fn comments_and_line_breaks() {
        let mut s = Scanner::new(b"f()\n(g) -- c\n(h) --[==[ long\n]==] x");
        let kinds: Vec<(Tok, bool)> = std::iter::from_fn(|| {
            let t = s.scan().unwrap();
            (t.token.kind != Tok::End).then_some((t.token.kind, t.newline_before))
        })
        .collect();
        assert_eq!(kinds[3], (Tok::LParen, true));
        // A comment between hides the line break, as in gopher-lua.
        assert_eq!(kinds[6], (Tok::LParen, false));
        assert_eq!(kinds.last(), Some(&(Tok::Ident, false)));
    }
}
