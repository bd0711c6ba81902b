//! gopher-lua's parser: goyacc's `yyParse` driver over the tables `lalr.rs` builds from
//! `grammar.rs`, and `parser.go.y`'s actions.
//!
//! The driver reads a token only when the state needs one, as goyacc's does, because that
//! decides which error comes first: a reduction's own error ("parse error" for an expression
//! used as a statement) fires before the next token is even scanned, and a lexer error fires
//! only when the parser asks for that token. Errors are reported as gopher-lua reports them:
//! at the scanner's position after the last token read, "near" that token's text.
//!
//! The parse stack is a vector, so no input can overflow the native stack here. The tree it
//! builds is walked recursively afterwards (compiler, rules, drop), so the parse stops with
//! [`Failure::TooDeep`] as soon as the tree would nest deeper than the caller allows.

use std::sync::OnceLock;

use super::ast::{Call, Expr, ExprKind, Field, FuncName, Function, Name, Stmt, StmtKind};
use super::grammar::{self, Action, Nt, PRODUCTIONS};
use super::lalr::{self, Act, Tables};
use super::lexer::{LexError, Scanned, Scanner, Tok, Token};

/// A syntax error as gopher-lua's `parse.Error` holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// `EOF_LINE` when the scanner had read past the end.
    pub line: i32,
    pub column: i32,
    pub near: Vec<u8>,
    pub message: &'static str,
}

impl From<LexError> for SyntaxError {
    fn from(e: LexError) -> Self {
        SyntaxError {
            line: e.line,
            column: e.column,
            near: e.near,
            message: e.message,
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum Failure {
    Syntax(SyntaxError),
    /// The tree nests deeper than allowed; where the parse was when it noticed.
    TooDeep {
        line: i32,
        column: i32,
    },
}

/// Where tokens come from: the scanner itself, or (for error recovery) tokens scanned earlier.
pub trait TokenSource<'a> {
    fn scan(&mut self) -> Result<Scanned<'a>, LexError>;
    /// The scanner's position after the last token returned.
    fn position(&self) -> (i32, i32);
}

impl<'a> TokenSource<'a> for Scanner<'a> {
    fn scan(&mut self) -> Result<Scanned<'a>, LexError> {
        Scanner::scan(self)
    }

    fn position(&self) -> (i32, i32) {
        Scanner::position(self)
    }
}

pub fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| lalr::build(&grammar::spec()))
}

/// Parses a whole chunk (gopher-lua's `parse.Parse`).
pub fn parse<'a>(
    source: &mut impl TokenSource<'a>,
    max_depth: usize,
) -> Result<Vec<Stmt<'a>>, Failure> {
    Parser {
        lexer: Lexer {
            source,
            last_text: Vec::new(),
            last_kind: None,
            last_start: (1, 1),
            paren_after_newline: false,
        },
        max_depth,
    }
    .run()
}

/// gopher-lua's `Lexer`: remembers the last token for error messages and whether a `(` came
/// right after a `)` and a line break.
struct Lexer<'s, S> {
    source: &'s mut S,
    last_text: Vec<u8>,
    last_kind: Option<Tok>,
    last_start: (i32, i32),
    paren_after_newline: bool,
}

impl<'a, S: TokenSource<'a>> Lexer<'_, S> {
    fn lex(&mut self) -> Result<Token<'a>, Failure> {
        let previous = self.last_kind;
        let scanned = self.source.scan().map_err(|e| Failure::Syntax(e.into()))?;
        let token = scanned.token;
        self.paren_after_newline =
            token.kind == Tok::LParen && previous == Some(Tok::RParen) && scanned.newline_before;
        if token.kind != Tok::End {
            self.last_text.clear();
            self.last_text.extend_from_slice(&token.text);
            self.last_kind = Some(token.kind);
            self.last_start = (token.line, token.column);
        }
        Ok(token)
    }

    fn error(&self, message: &'static str) -> Failure {
        let (line, column) = self.source.position();
        Failure::Syntax(SyntaxError {
            line,
            column,
            near: self.last_text.clone(),
            message,
        })
    }
}

#[derive(Default)]
enum Value<'a> {
    #[default]
    Empty,
    Token(Token<'a>),
    Stmts(Vec<Stmt<'a>>),
    Stmt(Stmt<'a>),
    Exprs(Vec<Expr<'a>>),
    Expr(Expr<'a>),
    Names(Vec<Name<'a>>),
    FuncName(FuncName<'a>),
    Function(Function<'a>),
    Params(Vec<Name<'a>>, bool),
    Fields(Vec<Field<'a>>),
    Field(Field<'a>),
}

struct Entry<'a> {
    state: u16,
    value: Value<'a>,
    /// How deep the tree under this value nests.
    depth: usize,
}

struct Parser<'s, S> {
    lexer: Lexer<'s, S>,
    max_depth: usize,
}

/// A value of the wrong kind can only come from a grammar/action mismatch; it surfaces as a
/// failure rather than a panic.
fn internal() -> Failure {
    Failure::Syntax(SyntaxError {
        line: 0,
        column: 0,
        near: Vec::new(),
        message: "internal parser error",
    })
}

macro_rules! take {
    ($values:expr, $i:expr, $variant:ident) => {
        match std::mem::take(&mut $values[$i].value) {
            Value::$variant(v) => v,
            _ => return Err(internal()),
        }
    };
}

fn name(token: Token<'_>) -> Name<'_> {
    Name {
        text: token.text,
        line: token.line,
        column: token.column,
    }
}

fn expr(kind: ExprKind<'_>, line: i32) -> Expr<'_> {
    Expr { kind, line }
}

fn stmt(kind: StmtKind<'_>, line: i32, last_line: i32) -> Stmt<'_> {
    Stmt {
        kind,
        line,
        last_line,
    }
}

/// Chains `elseif`s (each an `If` with no `otherwise`) and the final `else` block into
/// nested `If`s, as gopher-lua links them.
fn link_else<'a>(elseifs: Vec<Stmt<'a>>, mut otherwise: Vec<Stmt<'a>>) -> Vec<Stmt<'a>> {
    for mut branch in elseifs.into_iter().rev() {
        if let StmtKind::If { otherwise: o, .. } = &mut branch.kind {
            *o = otherwise;
        }
        otherwise = vec![branch];
    }
    otherwise
}

impl<'a, S: TokenSource<'a>> Parser<'_, S> {
    fn run(mut self) -> Result<Vec<Stmt<'a>>, Failure> {
        let t = tables();
        let mut stack: Vec<Entry<'a>> = vec![Entry {
            state: 0,
            value: Value::Empty,
            depth: 0,
        }];
        let mut lookahead: Option<Token<'a>> = None;
        loop {
            let state = stack.last().map_or(0, |e| usize::from(e.state));
            if !t.simple[state] {
                let token = match lookahead.take() {
                    Some(token) => token,
                    None => self.lexer.lex()?,
                };
                if let Act::Shift(next) = t.action(state, token.kind as usize) {
                    stack.push(Entry {
                        state: next,
                        value: Value::Token(token),
                        depth: 0,
                    });
                    continue;
                }
                lookahead = Some(token);
            }
            let mut rule = t.default[state];
            if t.exceptions[state] {
                let kind = match &lookahead {
                    Some(token) => token.kind,
                    None => {
                        let token = self.lexer.lex()?;
                        let kind = token.kind;
                        lookahead = Some(token);
                        kind
                    }
                };
                match t.action(state, kind as usize) {
                    Act::Reduce(r) => rule = Some(r),
                    Act::Accept => {
                        return match stack.pop().map(|e| e.value) {
                            Some(Value::Stmts(chunk)) => Ok(chunk),
                            _ => Err(internal()),
                        };
                    }
                    Act::Shift(_) | Act::None => {}
                }
            }
            let Some(rule) = rule else {
                return Err(self.lexer.error("syntax error"));
            };
            let rule = usize::from(rule);
            let Some(base) = stack.len().checked_sub(usize::from(t.rule_len[rule])) else {
                return Err(internal());
            };
            let depth = node_depth(PRODUCTIONS[rule].action, &stack[base..]);
            if depth > self.max_depth {
                let (line, column) = self.lexer.last_start;
                return Err(Failure::TooDeep { line, column });
            }
            let value = self.reduce(rule, &mut stack[base..])?;
            stack.truncate(base);
            let from = stack.last().map_or(0, |e| usize::from(e.state));
            let Some(next) = t.goto(from, usize::from(t.rule_lhs[rule])) else {
                return Err(internal());
            };
            stack.push(Entry {
                state: next as u16,
                value,
                depth,
            });
        }
    }

    /// Runs rule `rule`'s action on its right-hand side.
    fn reduce(&mut self, rule: usize, v: &mut [Entry<'a>]) -> Result<Value<'a>, Failure> {
        let lhs = PRODUCTIONS[rule].lhs;
        let value = match PRODUCTIONS[rule].action {
            Action::Accept => return Err(internal()),
            Action::Chunk | Action::Same => return Ok(std::mem::take(&mut v[0].value)),
            Action::ChunkLast | Action::ChunkLastSemi => {
                let mut list = take!(v, 0, Stmts);
                list.push(take!(v, 1, Stmt));
                return Ok(Value::Stmts(list));
            }
            Action::EmptyList => return Ok(Value::Stmts(Vec::new())),
            Action::Append => {
                let mut list = take!(v, 0, Stmts);
                list.push(take!(v, 1, Stmt));
                return Ok(Value::Stmts(list));
            }
            Action::Assign => {
                let lhs = take!(v, 0, Exprs);
                let rhs = take!(v, 2, Exprs);
                let line = lhs.first().map_or(0, |e| e.line);
                Value::Stmt(stmt(StmtKind::Assign { lhs, rhs }, line, 0))
            }
            Action::CallStat => {
                let e = take!(v, 0, Expr);
                if !matches!(e.kind, ExprKind::Call(_)) {
                    return Err(self.lexer.error("parse error"));
                }
                let line = e.line;
                Value::Stmt(stmt(StmtKind::Call(e), line, 0))
            }
            Action::Do => {
                let (open, close) = (take!(v, 0, Token), take!(v, 2, Token));
                let body = take!(v, 1, Stmts);
                Value::Stmt(stmt(StmtKind::Do(body), open.line, close.line))
            }
            Action::While => {
                let (open, close) = (take!(v, 0, Token), take!(v, 4, Token));
                let cond = take!(v, 1, Expr);
                let body = take!(v, 3, Stmts);
                Value::Stmt(stmt(StmtKind::While { cond, body }, open.line, close.line))
            }
            Action::Repeat => {
                let open = take!(v, 0, Token);
                let body = take!(v, 1, Stmts);
                let cond = take!(v, 3, Expr);
                let last = cond.line;
                Value::Stmt(stmt(StmtKind::Repeat { body, cond }, open.line, last))
            }
            Action::If | Action::IfElse => {
                let open = take!(v, 0, Token);
                let cond = take!(v, 1, Expr);
                let then = take!(v, 3, Stmts);
                let elseifs = take!(v, 4, Stmts);
                let (otherwise, close) = if PRODUCTIONS[rule].action == Action::IfElse {
                    (take!(v, 6, Stmts), take!(v, 7, Token))
                } else {
                    (Vec::new(), take!(v, 5, Token))
                };
                let otherwise = link_else(elseifs, otherwise);
                Value::Stmt(stmt(
                    StmtKind::If {
                        cond,
                        then,
                        otherwise,
                    },
                    open.line,
                    close.line,
                ))
            }
            Action::NumericFor | Action::NumericForStep => {
                let open = take!(v, 0, Token);
                let var = name(take!(v, 1, Token));
                let init = take!(v, 3, Expr);
                let limit = take!(v, 5, Expr);
                let (step, body, close) = if PRODUCTIONS[rule].action == Action::NumericForStep {
                    (
                        Some(take!(v, 7, Expr)),
                        take!(v, 9, Stmts),
                        take!(v, 10, Token),
                    )
                } else {
                    (None, take!(v, 7, Stmts), take!(v, 8, Token))
                };
                Value::Stmt(stmt(
                    StmtKind::NumericFor {
                        name: var,
                        init,
                        limit,
                        step,
                        body,
                    },
                    open.line,
                    close.line,
                ))
            }
            Action::GenericFor => {
                let open = take!(v, 0, Token);
                let names = take!(v, 1, Names);
                let exprs = take!(v, 3, Exprs);
                let body = take!(v, 5, Stmts);
                let close = take!(v, 6, Token);
                Value::Stmt(stmt(
                    StmtKind::GenericFor { names, exprs, body },
                    open.line,
                    close.line,
                ))
            }
            Action::FunctionStat => {
                let open = take!(v, 0, Token);
                let name = take!(v, 1, FuncName);
                let func = take!(v, 2, Function);
                let last = func.last_line;
                Value::Stmt(stmt(
                    StmtKind::FunctionDef {
                        name,
                        func: Box::new(func),
                    },
                    open.line,
                    last,
                ))
            }
            Action::LocalFunction => {
                let open = take!(v, 0, Token);
                let var = name(take!(v, 2, Token));
                let func = take!(v, 3, Function);
                let (line, last) = (func.line, func.last_line);
                Value::Stmt(stmt(
                    StmtKind::Local {
                        names: vec![var],
                        exprs: vec![expr(ExprKind::Function(Box::new(func)), line)],
                    },
                    open.line,
                    last,
                ))
            }
            Action::LocalAssign | Action::LocalDeclare => {
                let open = take!(v, 0, Token);
                let names = take!(v, 1, Names);
                let exprs = if PRODUCTIONS[rule].action == Action::LocalAssign {
                    take!(v, 3, Exprs)
                } else {
                    Vec::new()
                };
                Value::Stmt(stmt(StmtKind::Local { names, exprs }, open.line, 0))
            }
            Action::Label => {
                let open = take!(v, 0, Token);
                let label = take!(v, 1, Token);
                Value::Stmt(stmt(StmtKind::Label(label.text), open.line, 0))
            }
            Action::Goto => {
                let open = take!(v, 0, Token);
                let label = take!(v, 1, Token);
                Value::Stmt(stmt(StmtKind::Goto(label.text), open.line, 0))
            }
            Action::ElseIf => {
                let mut list = take!(v, 0, Stmts);
                let open = take!(v, 1, Token);
                let cond = take!(v, 2, Expr);
                let then = take!(v, 4, Stmts);
                list.push(stmt(
                    StmtKind::If {
                        cond,
                        then,
                        otherwise: Vec::new(),
                    },
                    open.line,
                    0,
                ));
                Value::Stmts(list)
            }
            Action::Return | Action::ReturnValues => {
                let open = take!(v, 0, Token);
                let values = if PRODUCTIONS[rule].action == Action::ReturnValues {
                    take!(v, 1, Exprs)
                } else {
                    Vec::new()
                };
                Value::Stmt(stmt(StmtKind::Return(values), open.line, 0))
            }
            Action::Break => {
                let open = take!(v, 0, Token);
                Value::Stmt(stmt(StmtKind::Break, open.line, 0))
            }
            Action::Method => {
                let chain = take!(v, 0, FuncName);
                let method = take!(v, 2, Token);
                return Ok(Value::FuncName(FuncName {
                    func: None,
                    receiver: chain.func,
                    method: Some(method.text),
                }));
            }
            Action::FuncNameIdent => {
                let t = take!(v, 0, Token);
                Value::FuncName(FuncName {
                    func: Some(expr(ExprKind::Ident(t.text), t.line)),
                    receiver: None,
                    method: None,
                })
            }
            Action::FuncNameField => {
                let chain = take!(v, 0, FuncName);
                let field = take!(v, 2, Token);
                let key = expr(ExprKind::String(field.text), field.line);
                let object = chain
                    .func
                    .unwrap_or_else(|| expr(ExprKind::Nil, field.line));
                Value::FuncName(FuncName {
                    func: Some(expr(
                        ExprKind::Index {
                            object: Box::new(object),
                            key: Box::new(key),
                        },
                        field.line,
                    )),
                    receiver: None,
                    method: None,
                })
            }
            Action::ListOf => {
                let value = match lhs {
                    Nt::NameList => Value::Names(vec![name(take!(v, 0, Token))]),
                    Nt::FieldList => Value::Fields(vec![take!(v, 0, Field)]),
                    _ => Value::Exprs(vec![take!(v, 0, Expr)]),
                };
                return Ok(value);
            }
            Action::AppendAfterComma => {
                let value = match lhs {
                    Nt::NameList => {
                        let mut list = take!(v, 0, Names);
                        list.push(name(take!(v, 2, Token)));
                        Value::Names(list)
                    }
                    Nt::FieldList => {
                        let mut list = take!(v, 0, Fields);
                        list.push(take!(v, 2, Field));
                        Value::Fields(list)
                    }
                    _ => {
                        let mut list = take!(v, 0, Exprs);
                        list.push(take!(v, 2, Expr));
                        Value::Exprs(list)
                    }
                };
                return Ok(value);
            }
            Action::VarName => {
                let t = take!(v, 0, Token);
                Value::Expr(expr(ExprKind::Ident(t.text), t.line))
            }
            Action::VarIndex => {
                let object = take!(v, 0, Expr);
                let key = take!(v, 2, Expr);
                let line = object.line;
                Value::Expr(expr(
                    ExprKind::Index {
                        object: Box::new(object),
                        key: Box::new(key),
                    },
                    line,
                ))
            }
            Action::VarField => {
                let object = take!(v, 0, Expr);
                let field = take!(v, 2, Token);
                let key = expr(ExprKind::String(field.text), field.line);
                let line = object.line;
                Value::Expr(expr(
                    ExprKind::Index {
                        object: Box::new(object),
                        key: Box::new(key),
                    },
                    line,
                ))
            }
            Action::Nil | Action::False | Action::True | Action::Number | Action::Vararg => {
                let t = take!(v, 0, Token);
                let kind = match PRODUCTIONS[rule].action {
                    Action::Nil => ExprKind::Nil,
                    Action::False => ExprKind::False,
                    Action::True => ExprKind::True,
                    Action::Number => ExprKind::Number(t.text),
                    _ => ExprKind::Vararg { adjusted: false },
                };
                Value::Expr(expr(kind, t.line))
            }
            Action::Binary(op) => {
                let lhs = take!(v, 0, Expr);
                let rhs = take!(v, 2, Expr);
                let line = lhs.line;
                Value::Expr(expr(
                    ExprKind::Binary {
                        op,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    line,
                ))
            }
            Action::Unary(op) => {
                let operand = take!(v, 1, Expr);
                let line = operand.line;
                Value::Expr(expr(
                    ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    line,
                ))
            }
            Action::StringLit => {
                let t = take!(v, 0, Token);
                Value::Expr(expr(ExprKind::String(t.text), t.line))
            }
            Action::Parenthesized => {
                let open = take!(v, 0, Token);
                let mut e = take!(v, 1, Expr);
                if let ExprKind::Vararg { adjusted } = &mut e.kind {
                    *adjusted = true;
                }
                e.line = open.line;
                return Ok(Value::Expr(e));
            }
            Action::AdjustedCall => {
                let mut e = take!(v, 1, Expr);
                if let ExprKind::Call(call) = &mut e.kind {
                    call.adjusted = true;
                }
                return Ok(Value::Expr(e));
            }
            Action::Call | Action::MethodCall => {
                let prefix = take!(v, 0, Expr);
                let line = prefix.line;
                let call = if PRODUCTIONS[rule].action == Action::MethodCall {
                    Call {
                        func: None,
                        receiver: Some(prefix),
                        method: Some(take!(v, 2, Token).text),
                        args: take!(v, 3, Exprs),
                        adjusted: false,
                    }
                } else {
                    Call {
                        func: Some(prefix),
                        receiver: None,
                        method: None,
                        args: take!(v, 1, Exprs),
                        adjusted: false,
                    }
                };
                Value::Expr(expr(ExprKind::Call(Box::new(call)), line))
            }
            Action::NoArgs | Action::ArgList => {
                if self.lexer.paren_after_newline {
                    let open = take!(v, 0, Token);
                    return Err(Failure::Syntax(SyntaxError {
                        line: open.line,
                        column: open.column,
                        near: open.text.into_owned(),
                        message: "ambiguous syntax (function call x new statement)",
                    }));
                }
                let args = if PRODUCTIONS[rule].action == Action::ArgList {
                    take!(v, 1, Exprs)
                } else {
                    Vec::new()
                };
                return Ok(Value::Exprs(args));
            }
            Action::SingleArg => return Ok(Value::Exprs(vec![take!(v, 0, Expr)])),
            Action::FunctionExpr => {
                let open = take!(v, 0, Token);
                let mut func = take!(v, 1, Function);
                func.line = open.line;
                Value::Expr(expr(ExprKind::Function(Box::new(func)), open.line))
            }
            Action::FuncBody | Action::FuncBodyNoParams => {
                let open = take!(v, 0, Token);
                let (params, vararg, body, close) = if PRODUCTIONS[rule].action == Action::FuncBody
                {
                    let (params, vararg) = match std::mem::take(&mut v[1].value) {
                        Value::Params(p, va) => (p, va),
                        _ => return Err(internal()),
                    };
                    (params, vararg, take!(v, 3, Stmts), take!(v, 4, Token))
                } else {
                    (Vec::new(), false, take!(v, 2, Stmts), take!(v, 3, Token))
                };
                Value::Function(Function {
                    params,
                    vararg,
                    body,
                    line: open.line,
                    last_line: close.line,
                })
            }
            Action::VarargParams => return Ok(Value::Params(Vec::new(), true)),
            Action::NamedParams => return Ok(Value::Params(take!(v, 0, Names), false)),
            Action::NamedVarargParams => return Ok(Value::Params(take!(v, 0, Names), true)),
            Action::EmptyTable | Action::Table => {
                let open = take!(v, 0, Token);
                let fields = if PRODUCTIONS[rule].action == Action::Table {
                    take!(v, 1, Fields)
                } else {
                    Vec::new()
                };
                Value::Expr(expr(ExprKind::Table(fields), open.line))
            }
            Action::FieldNamed => {
                let key = take!(v, 0, Token);
                let value = take!(v, 2, Expr);
                Value::Field(Field {
                    key: Some(expr(ExprKind::String(key.text), key.line)),
                    value,
                })
            }
            Action::FieldKeyed => {
                let key = take!(v, 1, Expr);
                let value = take!(v, 4, Expr);
                Value::Field(Field {
                    key: Some(key),
                    value,
                })
            }
            Action::FieldPositional => Value::Field(Field {
                key: None,
                value: take!(v, 0, Expr),
            }),
            Action::Separator => return Ok(Value::Empty),
        };
        Ok(value)
    }
}

fn list_len(e: &Entry<'_>) -> usize {
    match &e.value {
        Value::Stmts(list) => list.len(),
        _ => 0,
    }
}

/// How deep the tree under a reduction's result nests: one more than its deepest part for a
/// node of its own, the same for lists and pass-throughs. `elseif` branches and the final
/// `else` nest one level per earlier branch, as gopher-lua links them.
fn node_depth(action: Action, children: &[Entry<'_>]) -> usize {
    let deepest = children.iter().map(|e| e.depth).max().unwrap_or(0);
    match action {
        Action::ElseIf => {
            let branch = list_len(&children[0]) + 1;
            children[0]
                .depth
                .max(branch + 1 + children[2].depth.max(children[4].depth))
        }
        Action::IfElse => 1 + deepest.max(list_len(&children[4]) + children[6].depth),
        Action::Accept
        | Action::Chunk
        | Action::Same
        | Action::ChunkLast
        | Action::ChunkLastSemi
        | Action::EmptyList
        | Action::Append
        | Action::Method
        | Action::ListOf
        | Action::AppendAfterComma
        | Action::Parenthesized
        | Action::AdjustedCall
        | Action::NoArgs
        | Action::ArgList
        | Action::SingleArg
        | Action::VarargParams
        | Action::NamedParams
        | Action::NamedVarargParams
        | Action::Separator => deepest,
        _ => deepest + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(src: &str) -> Result<Vec<Stmt<'_>>, Failure> {
        parse(&mut Scanner::new(src.as_bytes()), 200)
    }

    fn error(src: &str) -> (i32, i32, String, &'static str) {
        match parse_str(src) {
            Err(Failure::Syntax(e)) => (
                e.line,
                e.column,
                String::from_utf8_lossy(&e.near).into_owned(),
                e.message,
            ),
            other => panic!("{src:?}: {other:?}"),
        }
    }

    #[test]
    fn tables_match_goyacc_counts() {
        let t = tables();
        // goyacc reports the same three shift/reduce conflicts for parser.go.y's grammar
        // without `goto` (188 states); the two `goto` rules add states, not conflicts.
        assert_eq!(t.shift_reduce_conflicts, 3);
        assert_eq!(t.reduce_reduce_conflicts, 0);
        // `:: name ::` and `goto name` add five states to goyacc's 188.
        assert_eq!(t.states(), 193);
    }

    #[test]
    fn accepts_what_gopher_lua_accepts() {
        for src in [
            ";",
            "x = 1\n;;",
            "for i = 1, 2 do ; end",
            "t = {1,,2}",
            "t = {1;;2}",
            "t = {5,;;,3}",
            "goto done ::done::",
            "f()\n(g)()",
            "(f())",
            "a = 1e",
            "return",
            "return 1;",
            "local function f(...) return ... end",
            "x = -2^-3 .. 'a' .. 'b'",
            "a.b.c:d 'x' {y = 1}",
        ] {
            assert!(parse_str(src).is_ok(), "{src:?}: {:?}", parse_str(src));
        }
    }

    #[test]
    fn reports_errors_where_gopher_lua_does() {
        assert_eq!(error("(a) = 1"), (1, 5, "=".into(), "parse error"));
        assert_eq!(
            error("#!/usr/bin/lua\na = 1"),
            (1, 1, "#".into(), "syntax error")
        );
        assert_eq!(error("a = 0x1."), (1, 8, "".into(), "syntax error"));
        assert_eq!(error("a = 0xA.8p1"), (1, 9, ".8".into(), "syntax error"));
        assert_eq!(error("a = 0x1p4"), (-1, 0, "p4".into(), "parse error"));
        assert_eq!(error("x )"), (1, 3, ")".into(), "parse error"));
        assert_eq!(error("x = = 1"), (1, 5, "=".into(), "syntax error"));
        assert_eq!(
            error("function f()\n  return 1"),
            (-1, 0, "1".into(), "syntax error")
        );
        assert_eq!(error("break x = 1"), (1, 7, "x".into(), "syntax error"));
    }

    #[test]
    fn builds_gopher_lua_lines() {
        let chunk = parse_str("local x = (\n1)\nfunction f(\na) end").unwrap();
        let StmtKind::Local { exprs, .. } = &chunk[0].kind else {
            panic!()
        };
        // A parenthesized expression takes the line of its `(`.
        assert_eq!(exprs[0].line, 1);
        let StmtKind::FunctionDef { func, .. } = &chunk[1].kind else {
            panic!()
        };
        assert_eq!((chunk[1].line, func.line, func.last_line), (3, 3, 4));
    }

    #[test]
    fn stops_at_the_depth_limit() {
        let deep = format!("x = {}1", "- ".repeat(300));
        assert!(matches!(parse_str(&deep), Err(Failure::TooDeep { .. })));
        let parens = format!("x = {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse_str(&parens).is_ok());
    }
}
