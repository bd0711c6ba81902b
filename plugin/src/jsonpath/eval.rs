//! Executing a parsed template, ported from client-go `util/jsonpath/jsonpath.go` (Kubernetes
//! 1.32) and the comparison functions of its forked `text/template` (`funcs.go`).
//!
//! Go walks `reflect.Value`s; here a result is a [`Val`]: a reference into the JSON document or a
//! literal from the template. The distinctions Go's reflection makes and kubectl's output shows
//! are kept: a JSON `null` inside the document is a nil interface (skipped by field and index
//! steps, printed `null`), while the value a `range` hands over for a `null` item or for an empty
//! list is reflect's zero value ([`Val::Invalid`], printed `<no value>`); template integers are Go
//! `int` and document integers `int64`; a string iterated by `*` or `..` yields bytes.
//!
//! Where upstream returns a partial result together with an error, [`Failure::partial`] carries
//! it, because an existence filter (`[?(@.x)]`) keeps an element whenever that partial result is
//! non-empty. Map members are visited in key order; Go visits them in random order.

use go_text::json::{go_number, sorted_members, GoNumber};
use serde_json::Value;

use super::parser::{Node, Param};
use super::value::Val;

/// An error together with the values upstream returns alongside it.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    pub partial: Vec<Val<'a>>,
    pub message: String,
}

type Eval<'a> = Result<Vec<Val<'a>>, Failure<'a>>;

fn fail<'a>(partial: Vec<Val<'a>>, message: impl Into<String>) -> Failure<'a> {
    Failure {
        partial,
        message: message.into(),
    }
}

/// A `range` inside a `range` is one level of recursion here (and in Go); beyond this depth the
/// template is refused rather than risking the stack.
const MAX_RANGE_DEPTH: usize = 1000;

/// The state `JSONPath` keeps while executing: how many `range`s opened, how deep, which `end`
/// closed the last one (an index into the top-level nodes, which is what upstream's node pointer
/// identifies).
pub(crate) struct Executor<'a> {
    nodes: &'a [Node],
    allow_missing_keys: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    last_end: Option<usize>,
    depth: usize,
}

impl<'a> Executor<'a> {
    pub(crate) fn new(nodes: &'a [Node], allow_missing_keys: bool) -> Self {
        Executor {
            nodes,
            allow_missing_keys,
            begin_range: 0,
            in_range: 0,
            end_range: 0,
            last_end: None,
            depth: 0,
        }
    }

    /// `FindResults(data)`: one group of values per top-level node, ranges expanded.
    pub(crate) fn find_results(&mut self, data: &'a Value) -> Result<Vec<Vec<Val<'a>>>, String> {
        // `reflect.ValueOf(nil)` is the zero value, not a nil interface.
        let root = match data {
            Value::Null => Val::Invalid,
            other => Val::Json(other),
        };
        self.find_from(root, 0)
    }

    fn find_from(&mut self, data: Val<'a>, start: usize) -> Result<Vec<Vec<Val<'a>>>, String> {
        if self.depth >= MAX_RANGE_DEPTH {
            return Err(format!(
                "range nested more than {MAX_RANGE_DEPTH} levels deep"
            ));
        }
        self.depth += 1;
        let result = self.find_from_inner(data, start);
        self.depth -= 1;
        result
    }

    fn find_from_inner(
        &mut self,
        data: Val<'a>,
        start: usize,
    ) -> Result<Vec<Vec<Val<'a>>>, String> {
        let nodes = self.nodes;
        let cur = [data];
        let mut full = Vec::new();
        let mut i = start;
        while i < nodes.len() {
            let results = self.walk(&cur, &nodes[i]).map_err(|f| f.message)?;

            // An `end` closes the block this call is executing.
            if self.end_range > 0 && self.end_range <= self.in_range {
                self.end_range -= 1;
                self.last_end = Some(i);
                break;
            }
            // A `range` runs the following nodes once per result.
            if self.begin_range > 0 {
                self.begin_range -= 1;
                self.in_range += 1;
                if results.is_empty() {
                    // Still executed (with nothing) so that the matching `end` is found.
                    self.find_from(Val::Invalid, i + 1)?;
                } else {
                    for value in &results {
                        let item = match value {
                            Val::Json(Value::Null) => Val::Invalid,
                            other => *other,
                        };
                        full.extend(self.find_from(item, i + 1)?);
                    }
                }
                self.in_range -= 1;
                if let Some(end) = self.last_end.filter(|e| *e > i) {
                    i = end;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk(&mut self, input: &[Val<'a>], node: &'a Node) -> Eval<'a> {
        match node {
            Node::List(nodes) => self.eval_list(input, nodes),
            Node::Text(text) => Ok(vec![Val::Text(text)]),
            Node::Field(name) => self.eval_field(input, name),
            Node::Array(params) => eval_array(input, params),
            Node::Filter {
                left,
                right,
                operator,
            } => self.eval_filter(input, left, right, operator),
            Node::Int(i) => Ok(vec![Val::Int(*i); input.len()]),
            Node::Float(f) => Ok(vec![Val::Float(*f); input.len()]),
            Node::Bool(b) => Ok(vec![Val::Bool(*b); input.len()]),
            Node::Wildcard => Ok(eval_wildcard(input)),
            Node::Recursive => Ok(eval_recursive(input)),
            Node::Union(members) => self.eval_union(input, members),
            Node::Identifier(name) => self.eval_identifier(input, name),
        }
    }

    fn eval_list(&mut self, input: &[Val<'a>], nodes: &'a [Node]) -> Eval<'a> {
        let mut cur = input.to_vec();
        for node in nodes {
            cur = self.walk(&cur, node)?;
        }
        Ok(cur)
    }

    fn eval_identifier(&mut self, input: &[Val<'a>], name: &str) -> Eval<'a> {
        match name {
            "range" => {
                self.begin_range += 1;
                Ok(input.to_vec())
            }
            "end" => {
                if self.in_range > 0 {
                    self.end_range += 1;
                    Ok(Vec::new())
                } else {
                    Err(fail(Vec::new(), "not in range, nothing to end"))
                }
            }
            other => Err(fail(
                input.to_vec(),
                format!("unrecognized identifier {other}"),
            )),
        }
    }

    fn eval_union(&mut self, input: &[Val<'a>], members: &'a [Vec<Node>]) -> Eval<'a> {
        let mut result = Vec::new();
        for member in members {
            match self.eval_list(input, member) {
                Ok(values) => result.extend(values),
                Err(f) => return Err(fail(input.to_vec(), f.message)),
            }
        }
        Ok(result)
    }

    fn eval_field(&mut self, input: &[Val<'a>], name: &str) -> Eval<'a> {
        let mut results = Vec::new();
        if input.is_empty() {
            return Ok(results);
        }
        for value in input {
            if let Val::Json(Value::Object(map)) = value {
                if let Some(found) = map.get(name) {
                    results.push(Val::Json(found));
                }
            }
        }
        if results.is_empty() && !self.allow_missing_keys {
            return Err(fail(results, format!("{name} is not found")));
        }
        Ok(results)
    }

    fn eval_filter(
        &mut self,
        input: &[Val<'a>],
        left: &'a [Node],
        right: &'a [Node],
        operator: &str,
    ) -> Eval<'a> {
        let mut results = Vec::new();
        for value in input {
            let Val::Json(Value::Array(items)) = value else {
                return Err(fail(
                    input.to_vec(),
                    format!(
                        "{} is not array or slice and cannot be filtered",
                        value.sprint_reflect()
                    ),
                ));
            };
            for item in items {
                let temp = [Val::Json(item)];
                let lefts = self.eval_list(&temp, left);
                if operator == "exists" {
                    let found = match &lefts {
                        Ok(v) => !v.is_empty(),
                        Err(f) => !f.partial.is_empty(),
                    };
                    if found {
                        results.push(Val::Json(item));
                    }
                    continue;
                }
                let lefts = lefts.map_err(|f| fail(input.to_vec(), f.message))?;
                let lhs = match lefts.as_slice() {
                    [] => continue,
                    [one] => *one,
                    _ => {
                        return Err(fail(
                            input.to_vec(),
                            "can only compare one element at a time",
                        ))
                    }
                };
                let rights = self
                    .eval_list(&temp, right)
                    .map_err(|f| fail(input.to_vec(), f.message))?;
                let rhs = match rights.as_slice() {
                    [] => continue,
                    [one] => *one,
                    _ => {
                        return Err(fail(
                            input.to_vec(),
                            "can only compare one element at a time",
                        ))
                    }
                };
                let pass = match operator {
                    "<" => less(&lhs, &rhs),
                    ">" => greater(&lhs, &rhs),
                    "==" => equal(&lhs, &rhs),
                    "!=" => equal(&lhs, &rhs).map(|e| !e),
                    "<=" => less_equal(&lhs, &rhs),
                    ">=" => less(&lhs, &rhs).map(|l| !l),
                    other => {
                        return Err(fail(
                            results,
                            format!("unrecognized filter operator {other}"),
                        ))
                    }
                };
                match pass {
                    Ok(true) => results.push(Val::Json(item)),
                    Ok(false) => {}
                    Err(message) => return Err(fail(results, message)),
                }
            }
        }
        Ok(results)
    }
}

fn eval_array<'a>(input: &[Val<'a>], params: &[Param; 3]) -> Eval<'a> {
    let mut result = Vec::new();
    for value in input {
        let items = match value {
            Val::Json(Value::Null) => continue,
            Val::Json(Value::Array(items)) => items,
            other => {
                return Err(fail(
                    input.to_vec(),
                    format!("{} is not array or slice", other.type_name()),
                ))
            }
        };
        let len = items.len() as i64;
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.wrapping_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.wrapping_add(len);
        }
        let (start, end) = (p[0].value, p[1].value);
        if end == start {
            // Zero elements requested: upstream returns at once, skipping any further input.
            return Ok(result);
        }
        if start >= len || start < 0 {
            return Err(fail(
                input.to_vec(),
                format!("array index out of bounds: index {start}, length {len}"),
            ));
        }
        if end > len || end < 0 {
            return Err(fail(
                input.to_vec(),
                format!(
                    "array index out of bounds: index {}, length {len}",
                    end.wrapping_sub(1)
                ),
            ));
        }
        if start > end {
            return Err(fail(
                input.to_vec(),
                format!("starting index {start} is greater than ending index {end}"),
            ));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err(fail(input.to_vec(), "step must be > 0"));
            }
            usize::try_from(p[2].value).unwrap_or(usize::MAX)
        } else {
            1
        };
        // Both bounds were checked against 0..=len above.
        let slice = &items[start as usize..end as usize];
        result.extend(slice.iter().step_by(step).map(Val::Json));
    }
    Ok(result)
}

/// The members of one value as `*` and `..` see them (nothing for scalars and `null`).
fn children<'a>(value: &Val<'a>) -> Vec<Val<'a>> {
    match value {
        Val::Json(Value::Object(map)) => sorted_members(map)
            .into_iter()
            .map(|(_, v)| Val::Json(v))
            .collect(),
        Val::Json(Value::Array(items)) => items.iter().map(Val::Json).collect(),
        Val::Json(Value::String(s)) => s.bytes().map(Val::Byte).collect(),
        Val::Text(s) => s.bytes().map(Val::Byte).collect(),
        _ => Vec::new(),
    }
}

fn eval_wildcard<'a>(input: &[Val<'a>]) -> Vec<Val<'a>> {
    input.iter().flat_map(children).collect()
}

/// Every value below the input that has members of its own, the value itself first (leaves are
/// never listed: `{..}` of `{"a":1}` is just the object).
fn eval_recursive<'a>(input: &[Val<'a>]) -> Vec<Val<'a>> {
    let mut result = Vec::new();
    // An explicit stack keeps deep documents off the call stack; pushing children in reverse
    // keeps upstream's pre-order.
    let mut stack: Vec<Val<'a>> = input.iter().rev().copied().collect();
    while let Some(value) = stack.pop() {
        // A string's members are bytes, which have none of their own: only the string is listed.
        if let Val::Json(Value::String(s)) = value {
            if !s.is_empty() {
                result.push(value);
            }
            continue;
        }
        if let Val::Text(s) = value {
            if !s.is_empty() {
                result.push(value);
            }
            continue;
        }
        let kids = children(&value);
        if !kids.is_empty() {
            result.push(value);
            stack.extend(kids.into_iter().rev());
        }
    }
    result
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Uint,
    Float,
    String,
}

enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
}

impl Basic<'_> {
    fn kind(&self) -> Kind {
        match self {
            Basic::Bool(_) => Kind::Bool,
            Basic::Int(_) => Kind::Int,
            Basic::Uint(_) => Kind::Uint,
            Basic::Float(_) => Kind::Float,
            Basic::Str(_) => Kind::String,
        }
    }
}

const BAD_TYPE: &str = "invalid type for comparison";
const INCOMPATIBLE: &str = "incompatible types for comparison";

fn basic<'a>(v: &Val<'a>) -> Result<Basic<'a>, String> {
    Ok(match v {
        Val::Json(Value::Bool(b)) | Val::Bool(b) => Basic::Bool(*b),
        Val::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(i) => Basic::Int(i),
            GoNumber::Float(f) => Basic::Float(f),
        },
        Val::Json(Value::String(s)) => Basic::Str(s),
        Val::Text(s) => Basic::Str(s),
        Val::Int(i) => Basic::Int(*i),
        Val::Float(f) => Basic::Float(*f),
        Val::Byte(b) => Basic::Uint(u64::from(*b)),
        Val::Invalid | Val::Json(Value::Null | Value::Array(_) | Value::Object(_)) => {
            return Err(BAD_TYPE.into())
        }
    })
}

/// `template.Equal`.
fn equal(a: &Val<'_>, b: &Val<'_>) -> Result<bool, String> {
    let (x, y) = (basic(a)?, basic(b)?);
    Ok(match (x, y) {
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Uint(x), Basic::Uint(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::Str(x), Basic::Str(y)) => x == y,
        (Basic::Int(x), Basic::Uint(y)) => x >= 0 && x as u64 == y,
        (Basic::Uint(x), Basic::Int(y)) => y >= 0 && x == y as u64,
        _ => return Err(INCOMPATIBLE.into()),
    })
}

/// `template.Less`.
fn less(a: &Val<'_>, b: &Val<'_>) -> Result<bool, String> {
    let (x, y) = (basic(a)?, basic(b)?);
    if x.kind() == y.kind() && x.kind() == Kind::Bool {
        return Err(BAD_TYPE.into());
    }
    Ok(match (x, y) {
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Uint(x), Basic::Uint(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::Str(x), Basic::Str(y)) => x < y,
        (Basic::Int(x), Basic::Uint(y)) => x < 0 || (x as u64) < y,
        (Basic::Uint(x), Basic::Int(y)) => y >= 0 && x < y as u64,
        _ => return Err(INCOMPATIBLE.into()),
    })
}

/// `template.LessEqual`: `<` or `==`.
fn less_equal(a: &Val<'_>, b: &Val<'_>) -> Result<bool, String> {
    if less(a, b)? {
        return Ok(true);
    }
    equal(a, b)
}

/// `template.Greater`: not `<=`.
fn greater(a: &Val<'_>, b: &Val<'_>) -> Result<bool, String> {
    less_equal(a, b).map(|le| !le)
}
