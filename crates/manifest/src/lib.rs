//! YAML (and JSON) manifests parsed into JSON values that remember where each node came from,
//! so a finding at `spec.stages[1].trigger` can be reported as `file.yaml:27:5`, and a finding
//! inside an embedded Lua script or CEL rule at the script's own line, mapped back to the file.
//!
//! Scalars resolve the way `kubectl` (sigs.k8s.io/yaml, go-yaml v2) resolves them, so the value
//! the engine judges is the value the API server would receive.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

use promotion_findings::{segments, FieldPath, Segment};

pub mod read;
pub use read::{io_reason, json_type, Entry, Manifest, ReadError, Reader, Reason, Source};

/// Deeper documents are refused: building and dropping values recurses.
pub const MAX_DEPTH: usize = 200;

/// 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    pub pos: Pos,
    pub message: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)
    }
}

impl std::error::Error for SourceError {}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Where the key of a mapping entry starts (findings point at `trigger:`, not its value).
    key: Option<Pos>,
    /// Where the value's content starts (for block scalars: the first content line).
    value: Pos,
    /// Where the value ends.
    end: Pos,
    style: Style,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// `|`: the value's lines are the file's lines, less the indentation.
    Literal,
    /// `>`: lines are folded into one another.
    Folded,
    /// Escapes and folded line breaks: the value's text is not the file's text.
    Quoted,
    /// Folded line breaks.
    Plain,
    Collection,
}

/// One document of a manifest file.
#[derive(Clone, Debug)]
pub struct SourceDocument {
    pub value: Value,
    /// Where the document starts.
    pub start: Pos,
    nodes: HashMap<String, Node>,
    /// The file's lines: no position is reported past the end of the file or of its line.
    lines: Arc<LineIndex>,
}

impl SourceDocument {
    /// Position of the node at an API-server field path (or of its nearest existing ancestor);
    /// with `inner`, the 1-based line and column inside that scalar, mapped to the file.
    pub fn locate(&self, path: &str, inner: Option<(usize, usize)>) -> Pos {
        let segs = segments(path);
        for len in (0..=segs.len()).rev() {
            let key = join(&segs[..len]);
            if let Some(node) = self.nodes.get(&key) {
                let exact = len == segs.len();
                return match (inner, exact) {
                    // A position after a block scalar's final line break may lie on a line the
                    // file does not have (at its very end), or on a shorter, less indented line
                    // that the parser counts as the block's (trailing blank lines).
                    (Some(inner), true) => self.lines.clamp(inside_scalar(node, inner)),
                    _ => node.key.unwrap_or(node.value),
                };
            }
        }
        self.start
    }
}

/// The file position of 1-based `line` and `column` inside a scalar's value. Only a literal
/// block keeps the value's lines as they are in the file; in any other scalar, escapes and
/// folding make the value's text differ from the file's, so only a position on the first line
/// of a scalar written on one line is mapped (escapes before it can only make the mapped column
/// fall short, never past the scalar), and any other points at the scalar's start.
fn inside_scalar(node: &Node, (line, col): (usize, usize)) -> Pos {
    let (line, col) = (line.max(1), col.max(1));
    match node.style {
        // A position after the block's final line break (the end of a script) is where the
        // block ends, not on the next, less indented, line.
        Style::Literal => Pos {
            line: node.value.line + line - 1,
            column: node.value.column + col - 1,
        }
        .min(node.end.max(node.value)),
        Style::Collection => node.key.unwrap_or(node.value),
        Style::Folded | Style::Quoted | Style::Plain
            if line == 1 && node.end.line == node.value.line =>
        {
            let quote = usize::from(node.style == Style::Quoted);
            // The end is exclusive; a quoted scalar's last position is its closing quote.
            let last = node.end.column.saturating_sub(quote).max(node.value.column);
            Pos {
                line: node.value.line,
                column: (node.value.column + quote + col - 1).min(last),
            }
        }
        Style::Folded | Style::Quoted | Style::Plain => node.value,
    }
}

fn join(segs: &[Segment]) -> String {
    let mut path = FieldPath::root("");
    for s in segs {
        path = match s {
            Segment::Key(k) => path.key(k),
            Segment::Index(i) => path.index(*i),
        };
    }
    path.as_str().to_string()
}

enum Frame {
    Map {
        map: Map<String, Value>,
        path: FieldPath,
        anchor: usize,
        /// The key read and waiting for its value.
        pending: Option<(String, Pos)>,
        /// Keys that came from a merge key (`<<`): explicit keys may override them.
        merged: Vec<String>,
    },
    Seq {
        items: Vec<Value>,
        path: FieldPath,
        anchor: usize,
    },
}

/// Parse every document in `text`. Empty documents are kept as `Value::Null`.
pub fn parse_documents(text: &str) -> Result<Vec<SourceDocument>, SourceError> {
    let lines = Arc::new(LineIndex::new(text));
    let mut builder = Builder {
        lines: Arc::clone(&lines),
        ..Builder::default()
    };
    let mut parser = Parser::new_from_str(text);
    // Character offsets of the collections open now, innermost last: an unclosed flow
    // collection is reported where it opens.
    let mut open: Vec<usize> = Vec::new();
    while let Some(event) = parser.next_event() {
        let (event, span) =
            event.map_err(|e| unclosed_flow(text, &lines, &open, e.marker(), e.info()))?;
        match event {
            Event::MappingStart(..) | Event::SequenceStart(..) => open.push(span.start.index()),
            Event::MappingEnd | Event::SequenceEnd => {
                open.pop();
            }
            _ => {}
        }
        builder.event(event, lines.pos(&span.start), lines.pos(&span.end))?;
    }
    Ok(builder.docs)
}

/// A parser error, placed as kubectl places it. go-yaml v2 reports a parser error on the line
/// before its token (it prints the 0-based line as if 1-based). For a flow mapping or sequence
/// never closed that is, in the usual case, the line where it opens: the error is put there, at
/// the opening bracket, and says where the parser gave up. When the parser gave up further on,
/// the error is put on the line kubectl names and says where the bracket opened.
fn unclosed_flow(
    text: &str,
    lines: &LineIndex,
    open: &[usize],
    marker: &Marker,
    info: &str,
) -> SourceError {
    let found = lines.pos(marker);
    let opens_with = |i: usize, b: char| text.chars().nth(i) == Some(b);
    let (bracket, what, problem) = if let Some(rest) = info.strip_prefix("while parsing ") {
        let (what, problem) = rest.split_once(", ").unwrap_or((rest, ""));
        match what {
            "a flow mapping" => ('{', what, problem),
            // go-yaml's words, which saphyr shortens to "expected ',' or ']'".
            "a flow sequence" => ('[', what, "did not find expected ',' or ']'"),
            _ => ('\0', what, problem),
        }
    } else if info == "illegal placement of ':' indicator"
        && open.last().is_some_and(|&i| opens_with(i, '['))
    {
        // A key over two lines inside `[` (`[b, c` then `d: e`: the plain scalar `c d` folds
        // across the line break): saphyr refuses the `:` while scanning, go-yaml parses it as a
        // value where it expects ',' or ']' and says so.
        ('[', "a flow sequence", "did not find expected ',' or ']'")
    } else {
        ('\0', "", "")
    };
    let start = open.iter().rev().copied().find(|&i| opens_with(i, bracket));
    let Some(index) = start.filter(|_| bracket != '\0') else {
        return SourceError {
            pos: found,
            message: info.to_string(),
        };
    };
    let opened = lines.at(index);
    let found_at = format!(
        "(found line {}, column {} instead)",
        found.line, found.column
    );
    let kubectl_line = found.line.saturating_sub(1).max(1);
    if kubectl_line <= opened.line {
        return SourceError {
            pos: opened,
            message: format!("{what} not closed: {problem} {found_at}"),
        };
    }
    let indent = text
        .chars()
        .skip(lines.start(kubectl_line))
        .take_while(|c| *c == ' ' || *c == '\t')
        .count();
    SourceError {
        pos: Pos {
            line: kubectl_line,
            column: indent + 1,
        },
        message: format!(
            "{what} opened at line {}, column {} not closed: {problem} {found_at}",
            opened.line, opened.column
        ),
    }
}

/// Where each line of a text starts, counting lines as `\n` ends them (as grep, editors and
/// [`position_of_byte`] do). The parser also ends a line at a lone CR, and puts an error met at
/// the end of a text without a final line break on a line after the last: positions are
/// recomputed from its character offsets instead.
#[derive(Debug, Default)]
struct LineIndex {
    /// Character offset of each line's start.
    starts: Vec<usize>,
    chars: usize,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        let mut chars = 0;
        for c in text.chars() {
            chars += 1;
            if c == '\n' {
                starts.push(chars);
            }
        }
        LineIndex { starts, chars }
    }

    fn pos(&self, marker: &Marker) -> Pos {
        self.at(marker.index())
    }

    fn end(&self) -> Pos {
        self.at(self.chars)
    }

    fn start(&self, line: usize) -> usize {
        self.starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0)
    }

    fn at(&self, index: usize) -> Pos {
        let index = index.min(self.chars);
        let line = self.starts.partition_point(|&s| s <= index).max(1);
        Pos {
            line,
            column: index - self.start(line) + 1,
        }
    }

    /// `pos`, moved back to the end of the file if it lies past it, or to the end of its line.
    fn clamp(&self, pos: Pos) -> Pos {
        let pos = pos.min(self.end());
        let next = self.starts.get(pos.line).map_or(self.chars + 1, |&s| s);
        Pos {
            line: pos.line,
            column: pos.column.min(next - self.start(pos.line)),
        }
    }
}

#[derive(Default)]
struct Builder {
    lines: Arc<LineIndex>,
    docs: Vec<SourceDocument>,
    stack: Vec<Frame>,
    nodes: HashMap<String, Node>,
    anchors: HashMap<usize, Value>,
    doc_start: Option<Pos>,
    root: Option<Value>,
    /// Nodes of the document so far, those copied by aliases included, and those copied by
    /// aliases: go-yaml's guard against expansion bombs (see [`excessive_aliasing`]).
    decoded: usize,
    aliased: usize,
}

/// go-yaml v2's `allowedAliasRatio` (decode.go): the share of a document's nodes that may come
/// from alias expansion, 99% up to 400,000 nodes, falling to 10% at 4,000,000.
fn excessive_aliasing(decoded: usize, aliased: usize) -> bool {
    const LOW: f64 = 400_000.0;
    const HIGH: f64 = 4_000_000.0;
    let n = decoded as f64;
    let allowed = if n <= LOW {
        0.99
    } else if n >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((n - LOW) / (HIGH - LOW))
    };
    aliased > 100 && decoded > 1000 && aliased as f64 / n > allowed
}

/// How many nodes a value holds (itself included); iterative, as values may nest deeply.
fn node_count(value: &Value) -> usize {
    let mut count = 0;
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        count += 1;
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    count
}

impl Builder {
    fn event(&mut self, event: Event<'_>, pos: Pos, end: Pos) -> Result<(), SourceError> {
        let err = |message: String| SourceError { pos, message };
        match event {
            Event::DocumentStart(_) => {
                self.doc_start = Some(pos);
                self.nodes.clear();
                self.anchors.clear();
                self.root = None;
                self.decoded = 0;
                self.aliased = 0;
            }
            Event::DocumentEnd => {
                let value = self.root.take().unwrap_or(Value::Null);
                self.docs.push(SourceDocument {
                    value,
                    start: self.doc_start.take().unwrap_or(pos),
                    nodes: std::mem::take(&mut self.nodes),
                    lines: Arc::clone(&self.lines),
                });
            }
            Event::Scalar(text, style, anchor, tag) => {
                if let Some(Frame::Map {
                    pending: pending @ None,
                    ..
                }) = self.stack.last_mut()
                {
                    *pending = Some((text.into_owned(), pos));
                    return Ok(());
                }
                self.decoded += 1;
                let tag = tag.map(|t| t.suffix.clone());
                let value = resolve_scalar(&text, style, tag.as_deref()).map_err(err)?;
                let node_style = match style {
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Style::Quoted,
                    ScalarStyle::Plain => Style::Plain,
                };
                let path = self.child_path(pos)?;
                self.record(&path, pos, end, node_style);
                if anchor > 0 {
                    self.anchors.insert(anchor, value.clone());
                }
                self.attach(value, pos)?;
            }
            Event::Alias(id) => {
                let Some(anchored) = self.anchors.get(&id) else {
                    return Err(err("alias refers to an unknown anchor".into()));
                };
                // Counted before the copy is made, so that a bomb is refused before it explodes.
                let copied = node_count(anchored);
                self.decoded += copied;
                self.aliased += copied;
                if excessive_aliasing(self.decoded, self.aliased) {
                    return Err(err("document contains excessive aliasing".into()));
                }
                let value = anchored.clone();
                let path = self.child_path(pos)?;
                self.record(&path, pos, pos, Style::Collection);
                self.attach(value, pos)?;
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(err(format!(
                        "document nests deeper than {MAX_DEPTH} levels"
                    )));
                }
                self.decoded += 1;
                let path = self.child_path(pos)?;
                self.record(&path, pos, pos, Style::Collection);
                self.stack
                    .push(if matches!(event, Event::MappingStart(..)) {
                        Frame::Map {
                            map: Map::new(),
                            path,
                            anchor,
                            pending: None,
                            merged: Vec::new(),
                        }
                    } else {
                        Frame::Seq {
                            items: Vec::new(),
                            path,
                            anchor,
                        }
                    });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let (value, anchor) = match self.stack.pop() {
                    Some(Frame::Map { map, anchor, .. }) => (Value::Object(map), anchor),
                    Some(Frame::Seq { items, anchor, .. }) => (Value::Array(items), anchor),
                    None => return Err(err("unbalanced end of collection".into())),
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, value.clone());
                }
                self.attach(value, pos)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
        }
        Ok(())
    }

    /// The path of the node that starts now, under the open collection.
    fn child_path(&self, pos: Pos) -> Result<FieldPath, SourceError> {
        Ok(match self.stack.last() {
            None => FieldPath::root(""),
            Some(Frame::Seq { items, path, .. }) => path.index(items.len()),
            Some(Frame::Map {
                pending: Some((k, _)),
                path,
                ..
            }) => path.key(k),
            Some(Frame::Map { pending: None, .. }) => {
                return Err(SourceError {
                    pos,
                    message: "complex mapping keys (a list or map used as a key) are not supported"
                        .into(),
                })
            }
        })
    }

    fn record(&mut self, path: &FieldPath, pos: Pos, end: Pos, style: Style) {
        let key = match self.stack.last() {
            Some(Frame::Map {
                pending: Some((_, key_pos)),
                ..
            }) => Some(*key_pos),
            _ => None,
        };
        self.nodes.insert(
            path.as_str().to_string(),
            Node {
                key,
                value: pos,
                end,
                style,
            },
        );
    }

    fn attach(&mut self, value: Value, pos: Pos) -> Result<(), SourceError> {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map {
                map,
                pending,
                merged,
                ..
            }) => {
                let Some((key, key_pos)) = pending.take() else {
                    return Err(SourceError {
                        pos,
                        message: "mapping value without a key".into(),
                    });
                };
                if key == "<<" {
                    merged.extend(merge_into(map, value));
                } else if let Some(i) = merged.iter().position(|k| *k == key) {
                    merged.swap_remove(i);
                    map.insert(key, value);
                } else if map.contains_key(&key) {
                    return Err(SourceError {
                        pos: key_pos,
                        message: format!("mapping key {key:?} already defined"),
                    });
                } else {
                    map.insert(key, value);
                }
            }
        }
        Ok(())
    }
}

/// YAML merge keys (`<<: *defaults`): entries already present win. Returns the keys added.
fn merge_into(map: &mut Map<String, Value>, value: Value) -> Vec<String> {
    let sources = match value {
        Value::Array(list) => list,
        other => vec![other],
    };
    let mut added = Vec::new();
    for source in sources {
        if let Value::Object(entries) = source {
            for (k, v) in entries {
                if !map.contains_key(&k) {
                    added.push(k.clone());
                    map.insert(k, v);
                }
            }
        }
    }
    added
}

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Result<Value, String> {
    if let Some(tag) = tag {
        return match tag {
            "str" => Ok(Value::String(text.to_string())),
            "null" => Ok(Value::Null),
            "bool" => plain_bool(text)
                .map(Value::Bool)
                .ok_or_else(|| format!("{text:?} is not a !!bool")),
            "int" => plain_int(text).ok_or_else(|| format!("{text:?} is not a !!int")),
            "float" => plain_float(text).ok_or_else(|| format!("{text:?} is not a !!float")),
            _ => Ok(Value::String(text.to_string())),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_string()));
    }
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    if let Some(b) = plain_bool(text) {
        return Ok(Value::Bool(b));
    }
    Ok(plain_int(text)
        .or_else(|| plain_float(text))
        .unwrap_or_else(|| Value::String(text.to_string())))
}

/// go-yaml v2 (what kubectl uses) still resolves the YAML 1.1 booleans.
fn plain_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" | "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            Some(true)
        }
        "false" | "False" | "FALSE" | "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

fn plain_int(text: &str) -> Option<Value> {
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    let (neg, digits) = match cleaned.as_bytes().first()? {
        b'-' => (true, &cleaned[1..]),
        b'+' => (false, &cleaned[1..]),
        _ => (false, cleaned.as_str()),
    };
    if digits.is_empty() {
        return None;
    }
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(b) = digits.strip_prefix("0b") {
        (2, b)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if neg {
        let v = i64::try_from(magnitude)
            .ok()
            .map(|m| -m)
            .or_else(|| (magnitude == i64::MIN.unsigned_abs()).then_some(i64::MIN))?;
        Some(Value::Number(v.into()))
    } else {
        Some(Value::Number(magnitude.into()))
    }
}

fn plain_float(text: &str) -> Option<Value> {
    let t = text.strip_prefix('+').unwrap_or(text);
    let unsigned = t.strip_prefix('-').unwrap_or(t);
    let looks_numeric = unsigned
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == '.')
        && unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+' | '_'))
        && unsigned.chars().any(|c| c.is_ascii_digit());
    if !looks_numeric {
        return None;
    }
    let f: f64 = t.replace('_', "").parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// Line and column (1-based) of a byte offset, for errors found before YAML parsing
/// (such as invalid UTF-8).
pub fn position_of_byte(bytes: &[u8], offset: usize) -> Pos {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    Pos {
        line,
        column: offset - line_start + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> SourceDocument {
        let mut docs = parse_documents(text).expect("parses");
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    #[test]
    fn positions_inside_scalars_stay_inside_the_file() {
        let doc = one("a: |\n  one\n  two three");
        // A literal block: the value's lines are the file's.
        assert_eq!(doc.locate("a", Some((2, 5))), Pos { line: 3, column: 7 });
        // After the final line break, which this file does not have: its end.
        assert_eq!(
            doc.locate("a", Some((3, 1))),
            Pos {
                line: 3,
                column: 12
            }
        );

        // After the final line break of a block followed by a less indented line: where the
        // block ends, never past the end of that next line.
        let doc = one("a:\n  b: |\n        one\nc: 1\n");
        let at = doc.locate("a.b", Some((2, 1)));
        assert!(at.line == 4 && at.column <= 5, "{at:?}");
        // ... or by blank lines less indented than the block, which the parser counts as the
        // block's: never past the end of such a line (found by the lint fuzz target).
        let doc = one("a:\n  b: |\n        one\n   \n");
        assert_eq!(doc.locate("a.b", Some((2, 1))), Pos { line: 4, column: 4 });
        let doc = one("a:\n  b: |\n        one\n\n\n");
        assert_eq!(doc.locate("a.b", Some((2, 1))), Pos { line: 4, column: 1 });

        // Escaped line breaks: the value's third line is nowhere in the file.
        let doc = one("a: \"x\\ny\\nzz(\"\nb: 1\n");
        assert_eq!(doc.locate("a", Some((3, 3))), Pos { line: 1, column: 4 });
        // On the first line: after the quote, and never past the closing one.
        assert_eq!(doc.locate("a", Some((1, 1))), Pos { line: 1, column: 5 });
        let doc = one("a: 'abc'\n");
        assert_eq!(doc.locate("a", Some((1, 4))), Pos { line: 1, column: 8 });
        assert_eq!(doc.locate("a", Some((1, 40))), Pos { line: 1, column: 8 });

        // A plain scalar folded over two lines: its first line is not the file's.
        let doc = one("a: one\n  two\nb: 1\n");
        assert_eq!(doc.locate("a", Some((1, 6))), Pos { line: 1, column: 4 });
    }

    #[test]
    fn a_lone_carriage_return_ends_no_line() {
        // The parser counts the CR as a line break; positions count `\n` only.
        let doc = one("a: \"x\r y\"\nb: [1, 2]\n");
        assert_eq!(doc.locate("b", None), Pos { line: 2, column: 1 });
        let err = parse_documents("a: \"x\r y\"\nb: {c\n").unwrap_err();
        // Reported at the `{` never closed; where the parser gave up is counted the same way.
        assert_eq!(err.pos, Pos { line: 2, column: 4 }, "{err}");
        assert!(
            err.message.ends_with("(found line 3, column 1 instead)"),
            "{err}"
        );
    }

    #[test]
    fn an_error_at_the_end_is_reported_inside_the_text() {
        // saphyr puts this error on the line after the last, which the file does not have.
        let text = "a:\n  b: [1,\n  ";
        let err = parse_documents(text).unwrap_err();
        assert_eq!(err.pos, Pos { line: 3, column: 3 }, "{err}");
    }

    #[test]
    fn resolves_scalars_like_kubectl() {
        let d = one(
            "a: 1\nb: true\nc: yes\nd: '1'\ne: ~\nf:\ng: 1.5\nh: 0x1f\ni: 5m\nj: \"on\"\nk: -3\n",
        );
        assert_eq!(
            d.value,
            serde_json::json!({"a": 1, "b": true, "c": true, "d": "1", "e": null, "f": null,
                "g": 1.5, "h": 31, "i": "5m", "j": "on", "k": -3})
        );
    }

    #[test]
    fn locates_block_and_flow_nodes() {
        let text =
            "spec:\n  stages:\n  - name: dev\n    trigger: {auto: {delay: 1d}}\n  - name: prod\n";
        let d = one(text);
        assert_eq!(
            d.locate("spec.stages[0].trigger", None),
            Pos { line: 4, column: 5 }
        );
        assert_eq!(
            d.locate("spec.stages[0].trigger.auto.delay", None),
            Pos {
                line: 4,
                column: 22
            }
        );
        assert_eq!(
            d.locate("spec.stages[1].name", None),
            Pos { line: 5, column: 5 }
        );
        // A missing node falls back to its nearest ancestor.
        assert_eq!(
            d.locate("spec.stages[1].clusterSelector", None),
            Pos { line: 5, column: 5 }
        );
    }

    #[test]
    fn maps_lines_inside_block_scalars() {
        let text =
            "check:\n  script: |\n    function evaluate()\n      if x != nil then\n    end\n";
        let d = one(text);
        assert_eq!(
            d.locate("check.script", Some((2, 12))),
            Pos {
                line: 4,
                column: 16
            }
        );
        assert_eq!(d.locate("check.script", None), Pos { line: 2, column: 3 });
    }

    #[test]
    fn maps_columns_inside_inline_scalars() {
        let d = one("rule: (a == 1\nq: \"x ==\"\n");
        assert_eq!(
            d.locate("rule", Some((1, 8))),
            Pos {
                line: 1,
                column: 14
            }
        );
        assert_eq!(d.locate("q", Some((1, 1))), Pos { line: 2, column: 5 });
    }

    #[test]
    fn splits_documents_and_keeps_empty_ones() {
        let docs = parse_documents("a: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[1].value, Value::Null);
        assert_eq!(docs[2].start.line, 3);
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let d = one("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nlist: [*b]\n");
        assert_eq!(d.value["other"], serde_json::json!({"y": 3, "x": 1}));
        assert_eq!(d.value["list"][0], serde_json::json!({"x": 1, "y": 2}));
    }

    #[test]
    fn rejects_duplicates_depth_and_garbage() {
        let e = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.pos.line, 2);
        assert!(e.message.contains("already defined"));
        let deep = format!("{}1{}", "[".repeat(220), "]".repeat(220));
        assert!(parse_documents(&deep)
            .unwrap_err()
            .message
            .contains("deeper"));
        let deeper = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse_documents(&deeper).is_err());
        assert!(parse_documents("a: [1, 2\nb: 3\n").is_err());
        assert!(parse_documents("key: 'unterminated\n").is_err());
    }

    #[test]
    fn refuses_alias_expansion_bombs_as_go_yaml_does() {
        // Nine levels of ten aliases: a billion nodes if expanded.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let e = parse_documents(&text).unwrap_err();
        assert_eq!(e.message, "document contains excessive aliasing");
        // Ordinary reuse stays allowed.
        let d = one("base: &b {x: 1}\nlist: [*b, *b, *b]\n");
        assert_eq!(d.value["list"][2]["x"], 1);
    }

    #[test]
    fn json_is_yaml() {
        let d = one("{\"spec\": {\"stages\": [{\"name\": \"dev\"}]}}");
        assert_eq!(d.value["spec"]["stages"][0]["name"], "dev");
        assert_eq!(d.locate("spec.stages[0].name", None).line, 1);
    }

    #[test]
    fn byte_positions() {
        assert_eq!(position_of_byte(b"ab\ncd", 4), Pos { line: 2, column: 2 });
    }
}
