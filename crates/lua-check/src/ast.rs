//! The syntax tree gopher-lua's parser builds (its `ast` package), with the same line numbers:
//! the compiler's messages quote them, quirks included (a parenthesized expression takes the
//! line of its `(`, a unary expression the line of its operand, a named function's body the
//! line of its parameter list).

use std::borrow::Cow;

/// Names and string contents: bytes, as Lua strings are.
pub type Bytes<'a> = Cow<'a, [u8]>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Gt,
    Lt,
    Ge,
    Le,
    Eq,
    Ne,
    Concat,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Minus,
    Not,
    Len,
}

/// A declared name, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Name<'a> {
    pub text: Bytes<'a>,
    pub line: i32,
    pub column: i32,
}

#[derive(Debug, PartialEq)]
pub struct Expr<'a> {
    pub kind: ExprKind<'a>,
    pub line: i32,
}

#[derive(Debug, PartialEq)]
pub enum ExprKind<'a> {
    Nil,
    False,
    True,
    /// The numeral as scanned.
    Number(Bytes<'a>),
    String(Bytes<'a>),
    /// `...`; `adjusted` when parenthesized (one value).
    Vararg {
        adjusted: bool,
    },
    Ident(Bytes<'a>),
    /// `object[key]` and `object.key` (gopher-lua's `AttrGetExpr`).
    Index {
        object: Box<Expr<'a>>,
        key: Box<Expr<'a>>,
    },
    Call(Box<Call<'a>>),
    Function(Box<Function<'a>>),
    Table(Vec<Field<'a>>),
    Binary {
        op: BinOp,
        lhs: Box<Expr<'a>>,
        rhs: Box<Expr<'a>>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr<'a>>,
    },
}

/// `func(args)` or `receiver:method(args)`.
#[derive(Debug, PartialEq)]
pub struct Call<'a> {
    pub func: Option<Expr<'a>>,
    pub receiver: Option<Expr<'a>>,
    pub method: Option<Bytes<'a>>,
    pub args: Vec<Expr<'a>>,
    /// Parenthesized, so it yields exactly one value.
    pub adjusted: bool,
}

#[derive(Debug, PartialEq)]
pub struct Function<'a> {
    pub params: Vec<Name<'a>>,
    pub vararg: bool,
    pub body: Vec<Stmt<'a>>,
    pub line: i32,
    pub last_line: i32,
}

#[derive(Debug, PartialEq)]
pub struct Field<'a> {
    pub key: Option<Expr<'a>>,
    pub value: Expr<'a>,
}

/// `function a.b.c:m()`: `func` is the name chain when there is no method, `receiver` when
/// there is one.
#[derive(Debug, PartialEq)]
pub struct FuncName<'a> {
    pub func: Option<Expr<'a>>,
    pub receiver: Option<Expr<'a>>,
    pub method: Option<Bytes<'a>>,
}

#[derive(Debug, PartialEq)]
pub struct Stmt<'a> {
    pub kind: StmtKind<'a>,
    pub line: i32,
    /// 0 when gopher-lua does not set it (then the statement ends on `line`).
    pub last_line: i32,
}

#[derive(Debug, PartialEq)]
pub enum StmtKind<'a> {
    Assign {
        lhs: Vec<Expr<'a>>,
        rhs: Vec<Expr<'a>>,
    },
    /// `local names = exprs`, and `local function name` (one name, one function).
    Local {
        names: Vec<Name<'a>>,
        exprs: Vec<Expr<'a>>,
    },
    /// A call used as a statement; the expression is always a call.
    Call(Expr<'a>),
    Do(Vec<Stmt<'a>>),
    While {
        cond: Expr<'a>,
        body: Vec<Stmt<'a>>,
    },
    Repeat {
        body: Vec<Stmt<'a>>,
        cond: Expr<'a>,
    },
    /// `elseif` branches are nested `If`s, alone in `otherwise`.
    If {
        cond: Expr<'a>,
        then: Vec<Stmt<'a>>,
        otherwise: Vec<Stmt<'a>>,
    },
    NumericFor {
        name: Name<'a>,
        init: Expr<'a>,
        limit: Expr<'a>,
        step: Option<Expr<'a>>,
        body: Vec<Stmt<'a>>,
    },
    GenericFor {
        names: Vec<Name<'a>>,
        exprs: Vec<Expr<'a>>,
        body: Vec<Stmt<'a>>,
    },
    FunctionDef {
        name: FuncName<'a>,
        func: Box<Function<'a>>,
    },
    Return(Vec<Expr<'a>>),
    Break,
    Label(Bytes<'a>),
    Goto(Bytes<'a>),
}

impl Stmt<'_> {
    /// gopher-lua's `eline`: the last line, or the first when no last line was recorded.
    pub fn end_line(&self) -> i32 {
        if self.last_line == 0 {
            self.line
        } else {
            self.last_line
        }
    }
}
