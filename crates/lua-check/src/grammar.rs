//! gopher-lua v1.1.2's `parse/parser.go.y`, rule for rule and in the same order, as data for
//! the LALR(1) builder in `lalr.rs`.
//!
//! goyacc numbers rules in the order they are written, and its tables depend on that order and
//! on the order of the terminals (see `Tok`), so both are kept. Each rule names the semantic
//! action that `parser.rs` runs when it is reduced.

use super::ast::{BinOp, UnOp};
use super::lalr::{Assoc, Prec, Spec, SpecRule};
use super::lexer::{Tok, TOKEN_KINDS};

/// Nonterminals, in `parser.go.y`'s `%type` order (after goyacc's own `$accept`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Nt {
    Accept,
    Chunk,
    Chunk1,
    Block,
    Stat,
    ElseIfs,
    LastStat,
    FuncName,
    FuncName1,
    VarList,
    Var,
    NameList,
    ExprList,
    Expr,
    String,
    PrefixExp,
    FunctionCall,
    AFunctionCall,
    Args,
    Function,
    FuncBody,
    ParList,
    TableConstructor,
    FieldList,
    Field,
    FieldSep,
}

pub const NONTERMINALS: usize = Nt::FieldSep as usize + 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sym {
    T(Tok),
    N(Nt),
}

/// What a reduction builds (the Go action of the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Accept,
    Chunk,
    ChunkLast,
    ChunkLastSemi,
    EmptyList,
    Append,
    Same,
    Assign,
    CallStat,
    Do,
    While,
    Repeat,
    If,
    IfElse,
    NumericFor,
    NumericForStep,
    GenericFor,
    FunctionStat,
    LocalFunction,
    LocalAssign,
    LocalDeclare,
    Label,
    Goto,
    ElseIf,
    Return,
    ReturnValues,
    Break,
    Method,
    FuncNameIdent,
    FuncNameField,
    ListOf,
    AppendAfterComma,
    VarName,
    VarIndex,
    VarField,
    Nil,
    False,
    True,
    Number,
    Vararg,
    Binary(BinOp),
    Unary(UnOp),
    StringLit,
    Parenthesized,
    AdjustedCall,
    Call,
    MethodCall,
    NoArgs,
    ArgList,
    SingleArg,
    FunctionExpr,
    FuncBody,
    FuncBodyNoParams,
    VarargParams,
    NamedParams,
    NamedVarargParams,
    EmptyTable,
    Table,
    FieldNamed,
    FieldKeyed,
    FieldPositional,
    Separator,
}

pub struct Production {
    pub lhs: Nt,
    pub rhs: &'static [Sym],
    /// `%prec` override.
    pub prec: Option<Tok>,
    pub action: Action,
}

const fn p(lhs: Nt, rhs: &'static [Sym], action: Action) -> Production {
    Production {
        lhs,
        rhs,
        prec: None,
        action,
    }
}

const fn unary(op: Tok, action: Action) -> Production {
    Production {
        lhs: Nt::Expr,
        rhs: match op {
            Tok::Minus => &[T(Tok::Minus), N(Nt::Expr)],
            Tok::Not => &[T(Tok::Not), N(Nt::Expr)],
            _ => &[T(Tok::Hash), N(Nt::Expr)],
        },
        prec: Some(Tok::Unary),
        action,
    }
}

const fn binary(op: Tok, bin: BinOp) -> Production {
    Production {
        lhs: Nt::Expr,
        rhs: match op {
            Tok::Or => &[N(Nt::Expr), T(Tok::Or), N(Nt::Expr)],
            Tok::And => &[N(Nt::Expr), T(Tok::And), N(Nt::Expr)],
            Tok::Gt => &[N(Nt::Expr), T(Tok::Gt), N(Nt::Expr)],
            Tok::Lt => &[N(Nt::Expr), T(Tok::Lt), N(Nt::Expr)],
            Tok::Ge => &[N(Nt::Expr), T(Tok::Ge), N(Nt::Expr)],
            Tok::Le => &[N(Nt::Expr), T(Tok::Le), N(Nt::Expr)],
            Tok::Eq => &[N(Nt::Expr), T(Tok::Eq), N(Nt::Expr)],
            Tok::Ne => &[N(Nt::Expr), T(Tok::Ne), N(Nt::Expr)],
            Tok::Concat => &[N(Nt::Expr), T(Tok::Concat), N(Nt::Expr)],
            Tok::Plus => &[N(Nt::Expr), T(Tok::Plus), N(Nt::Expr)],
            Tok::Minus => &[N(Nt::Expr), T(Tok::Minus), N(Nt::Expr)],
            Tok::Star => &[N(Nt::Expr), T(Tok::Star), N(Nt::Expr)],
            Tok::Slash => &[N(Nt::Expr), T(Tok::Slash), N(Nt::Expr)],
            Tok::Percent => &[N(Nt::Expr), T(Tok::Percent), N(Nt::Expr)],
            _ => &[N(Nt::Expr), T(Tok::Caret), N(Nt::Expr)],
        },
        prec: None,
        action: Action::Binary(bin),
    }
}

use Sym::{N, T};

/// The rules of `parser.go.y`; index = goyacc's rule number.
pub static PRODUCTIONS: [Production; 97] = [
    p(Nt::Accept, &[N(Nt::Chunk), T(Tok::End)], Action::Accept),
    // chunk
    p(Nt::Chunk, &[N(Nt::Chunk1)], Action::Chunk),
    p(
        Nt::Chunk,
        &[N(Nt::Chunk1), N(Nt::LastStat)],
        Action::ChunkLast,
    ),
    p(
        Nt::Chunk,
        &[N(Nt::Chunk1), N(Nt::LastStat), T(Tok::Semi)],
        Action::ChunkLastSemi,
    ),
    // chunk1
    p(Nt::Chunk1, &[], Action::EmptyList),
    p(Nt::Chunk1, &[N(Nt::Chunk1), N(Nt::Stat)], Action::Append),
    p(Nt::Chunk1, &[N(Nt::Chunk1), T(Tok::Semi)], Action::Same),
    // block
    p(Nt::Block, &[N(Nt::Chunk)], Action::Same),
    // stat
    p(
        Nt::Stat,
        &[N(Nt::VarList), T(Tok::Assign), N(Nt::ExprList)],
        Action::Assign,
    ),
    p(Nt::Stat, &[N(Nt::PrefixExp)], Action::CallStat),
    p(
        Nt::Stat,
        &[T(Tok::Do), N(Nt::Block), T(Tok::EndKw)],
        Action::Do,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::While),
            N(Nt::Expr),
            T(Tok::Do),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::While,
    ),
    p(
        Nt::Stat,
        &[T(Tok::Repeat), N(Nt::Block), T(Tok::Until), N(Nt::Expr)],
        Action::Repeat,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::If),
            N(Nt::Expr),
            T(Tok::Then),
            N(Nt::Block),
            N(Nt::ElseIfs),
            T(Tok::EndKw),
        ],
        Action::If,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::If),
            N(Nt::Expr),
            T(Tok::Then),
            N(Nt::Block),
            N(Nt::ElseIfs),
            T(Tok::Else),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::IfElse,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::For),
            T(Tok::Ident),
            T(Tok::Assign),
            N(Nt::Expr),
            T(Tok::Comma),
            N(Nt::Expr),
            T(Tok::Do),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::NumericFor,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::For),
            T(Tok::Ident),
            T(Tok::Assign),
            N(Nt::Expr),
            T(Tok::Comma),
            N(Nt::Expr),
            T(Tok::Comma),
            N(Nt::Expr),
            T(Tok::Do),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::NumericForStep,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::For),
            N(Nt::NameList),
            T(Tok::In),
            N(Nt::ExprList),
            T(Tok::Do),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::GenericFor,
    ),
    p(
        Nt::Stat,
        &[T(Tok::Function), N(Nt::FuncName), N(Nt::FuncBody)],
        Action::FunctionStat,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::Local),
            T(Tok::Function),
            T(Tok::Ident),
            N(Nt::FuncBody),
        ],
        Action::LocalFunction,
    ),
    p(
        Nt::Stat,
        &[
            T(Tok::Local),
            N(Nt::NameList),
            T(Tok::Assign),
            N(Nt::ExprList),
        ],
        Action::LocalAssign,
    ),
    p(
        Nt::Stat,
        &[T(Tok::Local), N(Nt::NameList)],
        Action::LocalDeclare,
    ),
    p(
        Nt::Stat,
        &[T(Tok::DoubleColon), T(Tok::Ident), T(Tok::DoubleColon)],
        Action::Label,
    ),
    p(Nt::Stat, &[T(Tok::Goto), T(Tok::Ident)], Action::Goto),
    // elseifs
    p(Nt::ElseIfs, &[], Action::EmptyList),
    p(
        Nt::ElseIfs,
        &[
            N(Nt::ElseIfs),
            T(Tok::ElseIf),
            N(Nt::Expr),
            T(Tok::Then),
            N(Nt::Block),
        ],
        Action::ElseIf,
    ),
    // laststat
    p(Nt::LastStat, &[T(Tok::Return)], Action::Return),
    p(
        Nt::LastStat,
        &[T(Tok::Return), N(Nt::ExprList)],
        Action::ReturnValues,
    ),
    p(Nt::LastStat, &[T(Tok::Break)], Action::Break),
    // funcname
    p(Nt::FuncName, &[N(Nt::FuncName1)], Action::Same),
    p(
        Nt::FuncName,
        &[N(Nt::FuncName1), T(Tok::Colon), T(Tok::Ident)],
        Action::Method,
    ),
    // funcname1
    p(Nt::FuncName1, &[T(Tok::Ident)], Action::FuncNameIdent),
    p(
        Nt::FuncName1,
        &[N(Nt::FuncName1), T(Tok::Dot), T(Tok::Ident)],
        Action::FuncNameField,
    ),
    // varlist
    p(Nt::VarList, &[N(Nt::Var)], Action::ListOf),
    p(
        Nt::VarList,
        &[N(Nt::VarList), T(Tok::Comma), N(Nt::Var)],
        Action::AppendAfterComma,
    ),
    // var
    p(Nt::Var, &[T(Tok::Ident)], Action::VarName),
    p(
        Nt::Var,
        &[
            N(Nt::PrefixExp),
            T(Tok::LBracket),
            N(Nt::Expr),
            T(Tok::RBracket),
        ],
        Action::VarIndex,
    ),
    p(
        Nt::Var,
        &[N(Nt::PrefixExp), T(Tok::Dot), T(Tok::Ident)],
        Action::VarField,
    ),
    // namelist
    p(Nt::NameList, &[T(Tok::Ident)], Action::ListOf),
    p(
        Nt::NameList,
        &[N(Nt::NameList), T(Tok::Comma), T(Tok::Ident)],
        Action::AppendAfterComma,
    ),
    // exprlist
    p(Nt::ExprList, &[N(Nt::Expr)], Action::ListOf),
    p(
        Nt::ExprList,
        &[N(Nt::ExprList), T(Tok::Comma), N(Nt::Expr)],
        Action::AppendAfterComma,
    ),
    // expr
    p(Nt::Expr, &[T(Tok::Nil)], Action::Nil),
    p(Nt::Expr, &[T(Tok::False)], Action::False),
    p(Nt::Expr, &[T(Tok::True)], Action::True),
    p(Nt::Expr, &[T(Tok::Number)], Action::Number),
    p(Nt::Expr, &[T(Tok::Dots)], Action::Vararg),
    p(Nt::Expr, &[N(Nt::Function)], Action::Same),
    p(Nt::Expr, &[N(Nt::PrefixExp)], Action::Same),
    p(Nt::Expr, &[N(Nt::String)], Action::Same),
    p(Nt::Expr, &[N(Nt::TableConstructor)], Action::Same),
    binary(Tok::Or, BinOp::Or),
    binary(Tok::And, BinOp::And),
    binary(Tok::Gt, BinOp::Gt),
    binary(Tok::Lt, BinOp::Lt),
    binary(Tok::Ge, BinOp::Ge),
    binary(Tok::Le, BinOp::Le),
    binary(Tok::Eq, BinOp::Eq),
    binary(Tok::Ne, BinOp::Ne),
    binary(Tok::Concat, BinOp::Concat),
    binary(Tok::Plus, BinOp::Add),
    binary(Tok::Minus, BinOp::Sub),
    binary(Tok::Star, BinOp::Mul),
    binary(Tok::Slash, BinOp::Div),
    binary(Tok::Percent, BinOp::Mod),
    binary(Tok::Caret, BinOp::Pow),
    unary(Tok::Minus, Action::Unary(UnOp::Minus)),
    unary(Tok::Not, Action::Unary(UnOp::Not)),
    unary(Tok::Hash, Action::Unary(UnOp::Len)),
    // string
    p(Nt::String, &[T(Tok::String)], Action::StringLit),
    // prefixexp
    p(Nt::PrefixExp, &[N(Nt::Var)], Action::Same),
    p(Nt::PrefixExp, &[N(Nt::AFunctionCall)], Action::Same),
    p(Nt::PrefixExp, &[N(Nt::FunctionCall)], Action::Same),
    p(
        Nt::PrefixExp,
        &[T(Tok::LParen), N(Nt::Expr), T(Tok::RParen)],
        Action::Parenthesized,
    ),
    // afunctioncall
    p(
        Nt::AFunctionCall,
        &[T(Tok::LParen), N(Nt::FunctionCall), T(Tok::RParen)],
        Action::AdjustedCall,
    ),
    // functioncall
    p(
        Nt::FunctionCall,
        &[N(Nt::PrefixExp), N(Nt::Args)],
        Action::Call,
    ),
    p(
        Nt::FunctionCall,
        &[N(Nt::PrefixExp), T(Tok::Colon), T(Tok::Ident), N(Nt::Args)],
        Action::MethodCall,
    ),
    // args
    p(Nt::Args, &[T(Tok::LParen), T(Tok::RParen)], Action::NoArgs),
    p(
        Nt::Args,
        &[T(Tok::LParen), N(Nt::ExprList), T(Tok::RParen)],
        Action::ArgList,
    ),
    p(Nt::Args, &[N(Nt::TableConstructor)], Action::SingleArg),
    p(Nt::Args, &[N(Nt::String)], Action::SingleArg),
    // function
    p(
        Nt::Function,
        &[T(Tok::Function), N(Nt::FuncBody)],
        Action::FunctionExpr,
    ),
    // funcbody
    p(
        Nt::FuncBody,
        &[
            T(Tok::LParen),
            N(Nt::ParList),
            T(Tok::RParen),
            N(Nt::Block),
            T(Tok::EndKw),
        ],
        Action::FuncBody,
    ),
    p(
        Nt::FuncBody,
        &[T(Tok::LParen), T(Tok::RParen), N(Nt::Block), T(Tok::EndKw)],
        Action::FuncBodyNoParams,
    ),
    // parlist
    p(Nt::ParList, &[T(Tok::Dots)], Action::VarargParams),
    p(Nt::ParList, &[N(Nt::NameList)], Action::NamedParams),
    p(
        Nt::ParList,
        &[N(Nt::NameList), T(Tok::Comma), T(Tok::Dots)],
        Action::NamedVarargParams,
    ),
    // tableconstructor
    p(
        Nt::TableConstructor,
        &[T(Tok::LBrace), T(Tok::RBrace)],
        Action::EmptyTable,
    ),
    p(
        Nt::TableConstructor,
        &[T(Tok::LBrace), N(Nt::FieldList), T(Tok::RBrace)],
        Action::Table,
    ),
    // fieldlist
    p(Nt::FieldList, &[N(Nt::Field)], Action::ListOf),
    p(
        Nt::FieldList,
        &[N(Nt::FieldList), N(Nt::FieldSep), N(Nt::Field)],
        Action::AppendAfterComma,
    ),
    p(
        Nt::FieldList,
        &[N(Nt::FieldList), N(Nt::FieldSep)],
        Action::Same,
    ),
    // field
    p(
        Nt::Field,
        &[T(Tok::Ident), T(Tok::Assign), N(Nt::Expr)],
        Action::FieldNamed,
    ),
    p(
        Nt::Field,
        &[
            T(Tok::LBracket),
            N(Nt::Expr),
            T(Tok::RBracket),
            T(Tok::Assign),
            N(Nt::Expr),
        ],
        Action::FieldKeyed,
    ),
    p(Nt::Field, &[N(Nt::Expr)], Action::FieldPositional),
    // fieldsep
    p(Nt::FieldSep, &[T(Tok::Comma)], Action::Separator),
    p(Nt::FieldSep, &[T(Tok::Semi)], Action::Separator),
];

/// `%left` / `%right` lines of `parser.go.y`, lowest first.
fn token_precedence(t: Tok) -> Prec {
    let (level, assoc) = match t {
        Tok::Or => (1, Assoc::Left),
        Tok::And => (2, Assoc::Left),
        Tok::Gt | Tok::Lt | Tok::Ge | Tok::Le | Tok::Eq | Tok::Ne => (3, Assoc::Left),
        Tok::Concat => (4, Assoc::Right),
        Tok::Plus | Tok::Minus => (5, Assoc::Left),
        Tok::Star | Tok::Slash | Tok::Percent => (6, Assoc::Left),
        Tok::Unary => (7, Assoc::Right),
        Tok::Caret => (8, Assoc::Right),
        _ => return Prec::NONE,
    };
    Prec { level, assoc }
}

pub fn symbol_id(s: Sym) -> usize {
    match s {
        T(t) => t as usize,
        N(n) => TOKEN_KINDS + n as usize,
    }
}

/// The grammar in the builder's terms. goyacc gives a rule the precedence of the last
/// terminal in it, even one without precedence, unless `%prec` says otherwise.
pub fn spec() -> Spec {
    let rules = PRODUCTIONS
        .iter()
        .map(|p| {
            let last_terminal = p.rhs.iter().rev().find_map(|s| match s {
                T(t) => Some(*t),
                N(_) => None,
            });
            SpecRule {
                lhs: p.lhs as usize,
                rhs: p.rhs.iter().map(|s| symbol_id(*s)).collect(),
                prec: p
                    .prec
                    .or(last_terminal)
                    .map_or(Prec::NONE, token_precedence),
            }
        })
        .collect();
    Spec {
        terminals: TOKEN_KINDS,
        nonterminals: NONTERMINALS,
        rules,
        token_prec: Tok::ALL.iter().map(|t| token_precedence(*t)).collect(),
        end: Tok::End as usize,
        error: Tok::ErrorToken as usize,
    }
}
