//! The template parser, ported from client-go `util/jsonpath/parser.go` and `node.go`
//! (Kubernetes 1.32). Quirks are kept on purpose, because kubectl users rely on them:
//! `['a.b']` means `.a.b`, a union splits on every comma, a filter's operator is the first run of
//! `!<>=` characters, `\` escapes one character in a field name.
//!
//! Go parses with mutual recursion, one call per token; this port loops instead, so a long
//! template cannot exhaust the stack.

/// One slice bound of `[start:end:step]`: `known` when written, `derived` for the end of a single
/// index (`[i]` is `[i:i+1]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Param {
    pub value: i64,
    pub known: bool,
    pub derived: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// Literal text, outside `{…}` or quoted inside it.
    Text(String),
    /// The nodes of one `{…}` action (also a filter side and a union member).
    List(Vec<Node>),
    Field(String),
    Identifier(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        operator: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
}

/// Parse a whole template: text and `{…}` actions. Errors are client-go's messages.
pub(crate) fn parse(text: &str) -> Result<Vec<Node>, String> {
    Parser::new(text).parse_all()
}

/// `parseAction`: the nodes of `{text}`.
fn parse_action(text: &str) -> Result<Vec<Node>, String> {
    let wrapped = format!("{{{text}}}");
    let root = parse(&wrapped)?;
    // The wrapped text starts with `{`, so the first node is always that action's list; anything
    // after an early `}` is dropped, as upstream drops it.
    match root.into_iter().next() {
        Some(Node::List(nodes)) => Ok(nodes),
        _ => Ok(Vec::new()),
    }
}

struct Parser<'t> {
    input: &'t str,
    pos: usize,
    start: usize,
    width: usize,
}

fn is_space(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_end_of_line(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// Go's `unicode.IsDigit`. Outside ASCII this takes any Unicode numeric (Go: decimal digits
/// only); such characters never form a valid number or field either way.
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || is_digit(c)
}

/// A character that ends an identifier or a field name (`None` is the end of input).
fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => {
            is_space(c)
                || is_end_of_line(c)
                || matches!(c, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
        }
    }
}

impl<'t> Parser<'t> {
    fn new(input: &'t str) -> Self {
        Parser {
            input,
            pos: 0,
            start: 0,
            width: 0,
        }
    }

    fn rest(&self) -> &'t str {
        &self.input[self.pos..]
    }

    fn consume_text(&mut self) -> &'t str {
        let value = &self.input[self.start..self.pos];
        self.start = self.pos;
        value
    }

    fn next(&mut self) -> Option<char> {
        match self.rest().chars().next() {
            None => {
                self.width = 0;
                None
            }
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    /// The byte two before the cursor: the character preceding a quote just read.
    fn escaped(&self) -> bool {
        self.pos >= 2 && self.input.as_bytes().get(self.pos - 2) == Some(&b'\\')
    }

    fn parse_all(mut self) -> Result<Vec<Node>, String> {
        let mut root = Vec::new();
        loop {
            match self.rest().find('{') {
                Some(offset) => {
                    self.pos += offset;
                    if self.pos > self.start {
                        root.push(Node::Text(self.consume_text().to_string()));
                    }
                    self.pos += 1;
                    self.consume_text();
                    let mut action = Vec::new();
                    self.parse_inside_action(&mut action)?;
                    root.push(Node::List(action));
                }
                None => {
                    self.pos = self.input.len();
                    if self.pos > self.start {
                        root.push(Node::Text(self.consume_text().to_string()));
                    }
                    return Ok(root);
                }
            }
        }
    }

    /// Tokens of one action until its closing `}` (consumed).
    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            match self.next() {
                None => return Err("unclosed action".into()),
                Some(c) if is_end_of_line(c) => return Err("unclosed action".into()),
                Some(' ' | '@' | '$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(cur)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(cur, q)?,
                Some('.') => self.parse_field(cur),
                Some(c) if c == '+' || c == '-' || is_digit(c) => {
                    self.backup();
                    self.parse_number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.parse_identifier(cur);
                }
                Some(c) => {
                    return Err(format!(
                        "unrecognized character in action: {}",
                        go_text::fmt::format_sharp_u(c)
                    ))
                }
            }
        }
    }

    /// Keywords (`range`, `end`) and the booleans `true` / `false`.
    fn parse_identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_string()),
        });
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err("invalid multiple recursive descent".into());
        }
        self.pos += 2;
        self.consume_text();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || is_digit(c) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume_text();
        if let Some(i) = go_text::strconv::atoi(value) {
            cur.push(Node::Int(i));
            return Ok(());
        }
        if let Some(f) = go_text::strconv::parse_float(value) {
            cur.push(Node::Float(f));
            return Ok(());
        }
        Err(format!("cannot parse number {value}"))
    }

    /// `[…]`: a union (`[a,b]`), a quoted key (`['a.b']`) or a slice (`[1:3]`, `[-1]`, `[*]`).
    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let consumed = self.consume_text();
        // `[` … `]`, both ASCII.
        let mut text = consumed.get(1..consumed.len() - 1).unwrap_or("");
        if text == "*" {
            text = ":";
        }

        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut members = Vec::with_capacity(parts.len());
            for part in parts {
                members.push(parse_action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            cur.push(Node::Union(members));
            return Ok(());
        }

        if let Some(key) = dict_key(text) {
            cur.extend(parse_action(&format!(".{key}"))?);
            return Ok(());
        }

        let groups = slice_groups(text).ok_or_else(|| format!("invalid array index {text}"))?;
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let group = groups[i];
            if !group.is_empty() {
                let number = if i > 0 { &group[1..] } else { group };
                if i > 0 && number.is_empty() {
                    params[i].known = false;
                } else {
                    params[i].known = true;
                    params[i].value = go_text::strconv::atoi(number)
                        .ok_or_else(|| format!("array index {number} is not a number"))?;
                }
            } else if i == 1 {
                params[i].known = true;
                params[i].value = params[0].value.wrapping_add(1);
                params[i].derived = true;
            }
        }
        cur.push(Node::Array(params));
        Ok(())
    }

    /// `[?(left op right)]` or `[?(path)]` (an existence test).
    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        self.pos += 3;
        self.consume_text();
        let mut begin = false;
        let mut end = false;
        let mut pair = '\0';
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if !self.escaped() && q == pair {
                        end = true;
                    }
                }
                Some(')') => {
                    if begin == end {
                        break;
                    }
                }
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let consumed = self.consume_text();
        // Without the closing `)]`.
        let text = consumed.get(..consumed.len() - 2).unwrap_or("");
        match split_comparison(text) {
            None => {
                let left = parse_action(text)?;
                cur.push(Node::Filter {
                    left,
                    right: Vec::new(),
                    operator: "exists".into(),
                });
            }
            Some((left, operator, right)) => {
                let left = parse_action(left)?;
                let right = parse_action(right)?;
                cur.push(Node::Filter {
                    left,
                    right,
                    operator: operator.to_string(),
                });
            }
        }
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(c) if c == end && !self.escaped() => break,
                Some(_) => {}
            }
        }
        let value = self.consume_text();
        let text = go_text::strconv::unquote_extend(value)
            .map_err(|e| format!("unquote string {value} error {e}"))?;
        cur.push(Node::Text(text));
        Ok(())
    }

    /// A field name up to the next unescaped terminator; `*` is the wildcard.
    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume_text();
        while self.advance() {}
        let value = self.consume_text();
        if value == "*" {
            cur.push(Node::Wildcard);
        } else {
            cur.push(Node::Field(value.replace('\\', "")));
        }
    }

    fn advance(&mut self) -> bool {
        let c = self.next();
        if c == Some('\\') {
            self.next();
        } else if is_terminator(c) {
            self.backup();
            return false;
        }
        true
    }
}

/// `^'([^']*)'$`
fn dict_key(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    (!inner.contains('\'')).then_some(inner)
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`: the three groups, empty when absent.
fn slice_groups(text: &str) -> Option<[&str; 3]> {
    fn signed_digits(s: &str, from: usize) -> usize {
        let bytes = s.as_bytes();
        let mut i = from;
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }
    let first_end = signed_digits(text, 0);
    let mut groups = [&text[..first_end], "", ""];
    let mut pos = first_end;
    for group in groups.iter_mut().skip(1) {
        if text.as_bytes().get(pos) == Some(&b':') {
            let end = signed_digits(text, pos + 1);
            *group = &text[pos..end];
            pos = end;
        }
    }
    (pos == text.len()).then_some(groups)
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`: left side, operator, right side (at least one character).
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let run = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    // The right side needs a character: when the operator run reaches the end, it gives one back
    // (operator characters are ASCII, so any byte split here is a character boundary).
    let op_len = if run == after.len() { run - 1 } else { run };
    if op_len == 0 {
        return None;
    }
    let right = &after[op_len..];
    if right.is_empty() || right.contains('\n') {
        return None;
    }
    Some((&text[..op_start], &after[..op_len], right))
}

#[cfg(test)]
mod tests {
    //! client-go `parser_test.go`, every case.

    use super::*;

    impl Node {
        /// Go's `String()` of the node, which the upstream test compares.
        fn go_string(&self) -> String {
            match self {
                Node::Text(t) => format!("NodeText: {t}"),
                Node::List(_) => "NodeList".into(),
                Node::Field(f) => format!("NodeField: {f}"),
                Node::Identifier(i) => format!("NodeIdentifier: {i}"),
                Node::Array(p) => format!(
                    "NodeArray: [{{{} {} {}}} {{{} {} {}}} {{{} {} {}}}]",
                    p[0].value,
                    p[0].known,
                    p[0].derived,
                    p[1].value,
                    p[1].known,
                    p[1].derived,
                    p[2].value,
                    p[2].known,
                    p[2].derived
                ),
                Node::Filter { operator, .. } => {
                    format!("NodeFilter: NodeList {operator} NodeList")
                }
                Node::Int(i) => format!("NodeInt: {i}"),
                Node::Float(f) => format!("NodeFloat: {f:.6}"),
                Node::Bool(b) => format!("NodeBool: {b}"),
                Node::Wildcard => "NodeWildcard".into(),
                Node::Recursive => "NodeRecursive".into(),
                Node::Union(_) => "NodeUnion".into(),
            }
        }
    }

    /// `collectNode`: the tree in pre-order, lists and filter sides included.
    fn collect(nodes: &[Node], out: &mut Vec<String>) {
        for node in nodes {
            out.push(node.go_string());
            match node {
                Node::List(inner) => collect(inner, out),
                Node::Filter { left, right, .. } => {
                    out.push("NodeList".into());
                    collect(left, out);
                    out.push("NodeList".into());
                    collect(right, out);
                }
                Node::Union(members) => {
                    for m in members {
                        out.push("NodeList".into());
                        collect(m, out);
                    }
                }
                _ => {}
            }
        }
    }

    fn text(t: &str) -> String {
        format!("NodeText: {t}")
    }
    fn field(f: &str) -> String {
        format!("NodeField: {f}")
    }
    fn list() -> String {
        "NodeList".into()
    }
    fn array(p: [(i64, bool, bool); 3]) -> String {
        let params = p.map(|(value, known, derived)| Param {
            value,
            known,
            derived,
        });
        Node::Array(params).go_string()
    }
    fn filter(op: &str) -> String {
        format!("NodeFilter: NodeList {op} NodeList")
    }

    #[test]
    fn parser_cases() {
        let cases: Vec<(&str, &str, Vec<String>)> = vec![
            ("plain", "hello jsonpath", vec![text("hello jsonpath")]),
            (
                "variable",
                "hello {.jsonpath}",
                vec![text("hello "), list(), field("jsonpath")],
            ),
            (
                "arrayfiled",
                "hello {['jsonpath']}",
                vec![text("hello "), list(), field("jsonpath")],
            ),
            ("quote", r#"{"{"}"#, vec![list(), text("{")]),
            (
                "array",
                "{[1:3]}",
                vec![
                    list(),
                    array([(1, true, false), (3, true, false), (0, false, false)]),
                ],
            ),
            (
                "allarray",
                "{.book[*].author}",
                vec![
                    list(),
                    field("book"),
                    array([(0, false, false), (0, false, false), (0, false, false)]),
                    field("author"),
                ],
            ),
            (
                "wildcard",
                "{.bicycle.*}",
                vec![list(), field("bicycle"), "NodeWildcard".into()],
            ),
            (
                "filter",
                "{[?(@.price<3)]}",
                vec![
                    list(),
                    filter("<"),
                    list(),
                    field("price"),
                    list(),
                    "NodeInt: 3".into(),
                ],
            ),
            ("recursive", "{..}", vec![list(), "NodeRecursive".into()]),
            (
                "recurField",
                "{..price}",
                vec![list(), "NodeRecursive".into(), field("price")],
            ),
            (
                "arraydict",
                "{['book.price']}",
                vec![list(), field("book"), field("price")],
            ),
            (
                "union",
                "{['bicycle.price', 3, 'book.price']}",
                vec![
                    list(),
                    "NodeUnion".into(),
                    list(),
                    field("bicycle"),
                    field("price"),
                    list(),
                    array([(3, true, false), (4, true, true), (0, false, false)]),
                    list(),
                    field("book"),
                    field("price"),
                ],
            ),
            (
                "range",
                "{range .items}{.name},{end}",
                vec![
                    list(),
                    "NodeIdentifier: range".into(),
                    field("items"),
                    list(),
                    field("name"),
                    text(","),
                    list(),
                    "NodeIdentifier: end".into(),
                ],
            ),
            (
                "paired parentheses in quotes",
                r#"{[?(@.status.nodeInfo.osImage == "()")]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("()"),
                ],
            ),
            (
                "paired parentheses in double quotes and with double quotes escape",
                r#"{[?(@.status.nodeInfo.osImage == "(\"\")")]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("(\"\")"),
                ],
            ),
            (
                "unregular parentheses in double quotes",
                r#"{[?(@.test == "())(")]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("test"),
                    list(),
                    text("())("),
                ],
            ),
            (
                "plain text in single quotes",
                "{[?(@.status.nodeInfo.osImage == 'Linux')]}",
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("Linux"),
                ],
            ),
            (
                "test filter suffix",
                r#"{[?(@.status.nodeInfo.osImage == "{[()]}")]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("{[()]}"),
                ],
            ),
            (
                "double inside single",
                r#"{[?(@.status.nodeInfo.osImage == "''")]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("''"),
                ],
            ),
            (
                "single inside double",
                r#"{[?(@.status.nodeInfo.osImage == '""')]}"#,
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("\"\""),
                ],
            ),
            (
                "single containing escaped single",
                r"{[?(@.status.nodeInfo.osImage == '\\\'')]}",
                vec![
                    list(),
                    filter("=="),
                    list(),
                    field("status"),
                    field("nodeInfo"),
                    field("osImage"),
                    list(),
                    text("\\'"),
                ],
            ),
            (
                "negative index slice, equals a[len-5] to a[len-1]",
                "{[-5:]}",
                vec![
                    list(),
                    array([(-5, true, false), (0, false, false), (0, false, false)]),
                ],
            ),
            (
                "negative index slice, equals a[len-1]",
                "{[-1]}",
                vec![
                    list(),
                    array([(-1, true, false), (0, true, true), (0, false, false)]),
                ],
            ),
            (
                "negative index slice, equals a[1] to a[len-1]",
                "{[1:-1]}",
                vec![
                    list(),
                    array([(1, true, false), (-1, true, false), (0, false, false)]),
                ],
            ),
        ];
        for (name, template, want) in cases {
            let nodes = parse(template).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut got = Vec::new();
            collect(&nodes, &mut got);
            assert_eq!(got, want, "{name}: {template}");
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert!(parse(r"{\\\}").is_err());
    }

    #[test]
    fn failing_templates_report_upstream_messages() {
        let cases = [
            ("{.hello", "unclosed action"),
            ("{*}", "unrecognized character in action: U+002A '*'"),
            ("{+12.3.0}", "cannot parse number +12.3.0"),
            ("{[1}", "unterminated array"),
            ("{[?(.price]}", "unterminated filter"),
            ("{........}", "invalid multiple recursive descent"),
        ];
        for (template, want) in cases {
            assert_eq!(parse(template), Err(want.to_string()), "{template}");
        }
    }

    #[test]
    fn quirks_kept_from_upstream() {
        // The operator run gives its last character back to the right side.
        assert_eq!(split_comparison("@.a=="), Some(("@.a", "=", "=")));
        assert_eq!(split_comparison("@.a<=@.b"), Some(("@.a", "<=", "@.b")));
        assert_eq!(split_comparison("=x"), None);
        assert_eq!(split_comparison("@.a="), None);
        // `=~` is not an operator: `~` starts the right side and is no token.
        assert_eq!(
            parse(r#"{[?(@.name=~"d")]}"#),
            Err("unrecognized character in action: U+007E '~'".into())
        );
        assert_eq!(slice_groups("-"), Some(["-", "", ""]));
        assert_eq!(slice_groups("1:2:3"), Some(["1", ":2", ":3"]));
        assert_eq!(slice_groups("1:2:3:4"), None);
        assert_eq!(parse("{[a]}"), Err("invalid array index a".into()));
        assert_eq!(parse("{[-]}"), Err("array index - is not a number".into()));
        assert_eq!(
            parse(r#"{"it\'s"}"#),
            Err(r#"unquote string "it\'s" error invalid syntax"#.into())
        );
        assert_eq!(
            parse("{\t}"),
            Err("unrecognized character in action: U+0009".into())
        );
        // An escaped terminator stays in the field name, without the backslash.
        assert_eq!(
            parse(r"{.kubernetes\.io/hostname}"),
            Ok(vec![Node::List(vec![Node::Field(
                "kubernetes.io/hostname".into()
            )])])
        );
        // `{.}` is the field with no name.
        assert_eq!(
            parse("{.}"),
            Ok(vec![Node::List(vec![Node::Field(String::new())])])
        );
        // A `}` inside a union member ends that member's action; the rest is dropped.
        assert_eq!(
            parse("{['a}b', 'c']}"),
            Ok(vec![Node::List(vec![Node::Union(vec![
                vec![Node::Field("a".into())],
                vec![Node::Field("c".into())]
            ])])])
        );
        assert_eq!(
            parse("{true false 1.5}"),
            Ok(vec![Node::List(vec![
                Node::Bool(true),
                Node::Bool(false),
                Node::Float(1.5)
            ])])
        );
    }
}
