//! Expressions: `compileExpr` and the expression compilers of `compile.go`, including its
//! constant folding, jump-based `and`/`or` and conditions, calls and table constructors.

use super::super::ast::{BinOp, Call, Expr, ExprKind, Field, Function, UnOp};
use super::code::{is_op, rk_constant, Op, MAX_INDEX_RK};
use super::scope::{FuncState, VARARG_NEEDS_ARG};
use super::{Body, CompileError, Compiler, Located, Scope};

type R<T = ()> = Result<T, CompileError>;

/// `regNotDefined`: one past the largest register an instruction can name.
pub const REG_NOT_DEFINED: i32 = 256;
/// `FieldsPerFlush`.
const FIELDS_PER_FLUSH: i32 = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcType {
    Global,
    Upvalue,
    Local,
    Table,
    Vararg,
    Method,
    None,
}

impl From<Scope> for EcType {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Global => EcType::Global,
            Scope::Upvalue => EcType::Upvalue,
            Scope::Local => EcType::Local,
        }
    }
}

/// `expcontext`: where a value should land, and how many results are wanted
/// (`varargopt`: n ≥ 0 wants n+1, -1 none, -2 all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ec {
    pub ty: EcType,
    pub reg: i32,
    pub varargopt: i32,
}

impl Ec {
    pub fn none(varargopt: i32) -> Self {
        Ec {
            ty: EcType::None,
            reg: REG_NOT_DEFINED,
            varargopt,
        }
    }

    pub fn method() -> Self {
        Ec {
            ty: EcType::Method,
            reg: REG_NOT_DEFINED,
            varargopt: 0,
        }
    }

    pub fn local(reg: i32) -> Self {
        Ec {
            ty: EcType::Local,
            reg,
            varargopt: 0,
        }
    }

    /// `savereg`.
    fn target(&self, reg: i32) -> i32 {
        if self.ty != EcType::Local || self.reg == REG_NOT_DEFINED {
            reg
        } else {
            self.reg
        }
    }

    /// `shouldmove`.
    fn moves_from(&self, reg: i32) -> bool {
        self.ty == EcType::Local && self.reg != REG_NOT_DEFINED && self.reg != reg
    }
}

/// An expression, or one of the expressions gopher-lua's compiler makes up on the way.
#[derive(Clone, Copy)]
pub enum Operand<'x> {
    Expr(&'x Expr<'x>),
    /// A function definition's body, assigned to its name.
    Function(&'x Function<'x>),
    /// The `nil` given to assignment targets without a value.
    Nil,
    /// The implicit step of a numeric `for`.
    Number(f64),
}

impl Operand<'_> {
    /// `isVarArgReturnExpr`: a call or `...` that is not parenthesized.
    pub fn is_vararg_return(&self) -> bool {
        match self {
            Operand::Expr(e) => match &e.kind {
                ExprKind::Call(c) => !c.adjusted,
                ExprKind::Vararg { adjusted } => !adjusted,
                _ => false,
            },
            _ => false,
        }
    }

    pub fn is_logical(&self) -> bool {
        matches!(self, Operand::Expr(e) if is_logical(e))
    }
}

fn is_logical(e: &Expr<'_>) -> bool {
    matches!(
        e.kind,
        ExprKind::Binary {
            op: BinOp::And | BinOp::Or,
            ..
        }
    )
}

fn arithmetic(op: BinOp) -> Option<Op> {
    Some(match op {
        BinOp::Add => Op::Add,
        BinOp::Sub => Op::Sub,
        BinOp::Mul => Op::Mul,
        BinOp::Div => Op::Div,
        BinOp::Mod => Op::Mod,
        BinOp::Pow => Op::Pow,
        _ => return None,
    })
}

/// gopher-lua's `parseNumber` of a numeral as scanned (NaN when it is not one).
pub fn parse_number(text: &[u8]) -> f64 {
    let start = text
        .iter()
        .position(|b| !b" \t\n".contains(b))
        .unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|b| !b" \t\n".contains(b))
        .map_or(start, |i| i + 1);
    let Ok(s) = std::str::from_utf8(&text[start..end.max(start)]) else {
        return f64::NAN;
    };
    parse_go_int(s)
        .map(|v| v as f64)
        .or_else(|| s.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// `strconv.ParseInt(s, 0, 64)` for the numerals the lexer produces: decimal, `0x` hex and
/// leading-zero octal.
fn parse_go_int(s: &str) -> Option<i64> {
    let (digits, radix) = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i64::from_str_radix(digits, radix).ok()
}

fn lua_modulo(lhs: f64, rhs: f64) -> f64 {
    let v = lhs % rhs;
    if (rhs > 0.0 && v < 0.0) || (rhs < 0.0 && v > 0.0) {
        v + rhs
    } else {
        v
    }
}

/// `constFold`: the value of an arithmetic expression on numerals, if it is one.
fn const_fold(e: &Expr<'_>) -> Option<f64> {
    match &e.kind {
        ExprKind::Number(text) => Some(parse_number(text)),
        ExprKind::Binary { op, lhs, rhs } => {
            arithmetic(*op)?;
            let (l, r) = (const_fold(lhs)?, const_fold(rhs)?);
            Some(match op {
                BinOp::Add => l + r,
                BinOp::Sub => l - r,
                BinOp::Mul => l * r,
                BinOp::Div => l / r,
                BinOp::Mod => lua_modulo(l, r),
                _ => l.powf(r),
            })
        }
        ExprKind::Unary {
            op: UnOp::Minus,
            operand,
        } => const_fold(operand).map(|v| -v),
        _ => None,
    }
}

/// `int2Fb`: a table size as a "floating point byte".
fn int2fb(mut x: i32) -> i32 {
    let mut e = 0;
    while x >= 16 {
        x = (x + 1) >> 1;
        e += 1;
    }
    if x < 8 {
        x
    } else {
        ((e + 1) << 3) | (x - 8)
    }
}

/// Labels of one `and`/`or` expression (`lblabels`).
struct Logical {
    t: i32,
    f: i32,
    e: i32,
    b: bool,
}

impl<'x> Compiler<'x> {
    fn f(&mut self) -> &mut FuncState<'x> {
        &mut self.current
    }

    pub(super) fn operand(&mut self, reg: i32, operand: Operand<'x>, ec: Ec) -> R<i32> {
        match operand {
            Operand::Expr(e) => self.expr(reg, e, ec),
            Operand::Function(f) => self.function_expr(reg, f, ec),
            Operand::Nil => {
                let sreg = ec.target(reg);
                self.f().code.load_nil(sreg, sreg);
                Ok(i32::from(sreg >= reg))
            }
            Operand::Number(n) => {
                let sreg = ec.target(reg);
                self.load_number(sreg, n)?;
                Ok(i32::from(sreg >= reg))
            }
        }
    }

    fn load_number(&mut self, sreg: i32, n: f64) -> R {
        let k = self.f().number_constant(n)?;
        self.f().code.abx(Op::LoadK, sreg, k);
        Ok(())
    }

    /// `compileExpr`: compiles `e` into `reg` (or where `ec` says); returns how many
    /// registers from `reg` on it used.
    pub(super) fn expr(&mut self, reg: i32, e: &'x Expr<'x>, ec: Ec) -> R<i32> {
        let sreg = ec.target(reg);
        let used = i32::from(sreg >= reg);
        match &e.kind {
            ExprKind::String(s) => {
                let k = self.f().string_constant(s)?;
                self.f().code.abx(Op::LoadK, sreg, k);
            }
            ExprKind::Number(text) => self.load_number(sreg, parse_number(text))?,
            ExprKind::Nil => self.f().code.load_nil(sreg, sreg),
            ExprKind::False => self.f().code.abc(Op::LoadBool, sreg, 0, 0),
            ExprKind::True => self.f().code.abc(Op::LoadBool, sreg, 1, 0),
            ExprKind::Ident(name) => match self.scope_of(name) {
                Scope::Global => {
                    let k = self.f().string_constant(name)?;
                    self.f().code.abx(Op::GetGlobal, sreg, k);
                }
                Scope::Upvalue => {
                    let u = self.f().upvalues.register_unique(name);
                    self.f().code.abc(Op::GetUpval, sreg, u, 0);
                }
                Scope::Local => {
                    let b = self.f().find_local(name).map_or(-1, |(r, _)| r);
                    self.f().code.abc(Op::Move, sreg, b, 0);
                }
            },
            ExprKind::Vararg { .. } => {
                let f = self.f();
                if f.is_vararg == 0 {
                    return Err(CompileError {
                        line: e.line,
                        message: "cannot use '...' outside a vararg function".into(),
                    });
                }
                f.is_vararg &= !VARARG_NEEDS_ARG;
                f.code.abc(Op::Vararg, sreg, 2 + ec.varargopt, 0);
                if f.reg_top() > sreg + 2 + ec.varargopt || ec.varargopt < -1 {
                    return Ok(0);
                }
                return Ok(sreg + 1 + ec.varargopt - reg);
            }
            ExprKind::Index { object, key } => {
                let mut reg = reg;
                let mut b = reg;
                self.expr_propagated(object, &mut reg, &mut b, false)?;
                let mut c = reg;
                self.expr_propagated(key, &mut reg, &mut c, true)?;
                let op = if matches!(key.kind, ExprKind::String(_)) {
                    Op::GetTableKs
                } else {
                    Op::GetTable
                };
                self.f().code.abc(op, sreg, b, c);
            }
            ExprKind::Table(fields) => {
                self.table(reg, fields, ec)?;
                return Ok(1);
            }
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinOp::And | BinOp::Or => self.logical(reg, *op, lhs, rhs, ec)?,
                BinOp::Concat => self.concat(reg, lhs, rhs, ec)?,
                BinOp::Gt | BinOp::Lt | BinOp::Ge | BinOp::Le | BinOp::Eq | BinOp::Ne => {
                    self.relational(reg, *op, lhs, rhs, ec)?
                }
                _ => self.arithmetic(reg, e, ec)?,
            },
            ExprKind::Unary { op, operand } => self.unary(reg, e, *op, operand, ec)?,
            ExprKind::Call(call) => return self.call(reg, call, ec),
            ExprKind::Function(f) => return self.function_expr(reg, f, ec),
        }
        Ok(used)
    }

    /// `compileExprWithKMVPropagation` (`constants`) / `compileExprWithMVPropagation`: the
    /// operand's register or constant index goes to `save`.
    pub(super) fn expr_propagated(
        &mut self,
        e: &'x Expr<'x>,
        reg: &mut i32,
        save: &mut i32,
        constants: bool,
    ) -> R {
        let inc = self.expr(*reg, e, Ec::none(0))?;
        if is_logical(e) {
            *save = *reg;
            *reg += inc;
        } else {
            let top = self.f().reg_top();
            self.f().code.propagate(top, save, reg, inc, constants);
        }
        Ok(())
    }

    /// `compileFunctionExpr` in a fresh function state, then the closure and its upvalues.
    /// An error inside stops that function only; it is recorded and this one carries on.
    pub(super) fn function_expr(&mut self, reg: i32, func: &'x Function<'x>, ec: Ec) -> R<i32> {
        let sreg = ec.target(reg);
        let parent = std::mem::replace(&mut self.current, FuncState::new());
        self.parents.push(parent);
        let result = self.function(&Body::of(func), ec.ty == EcType::Method);
        let Some(parent) = self.parents.pop() else {
            return Ok(i32::from(sreg >= reg));
        };
        let child = std::mem::replace(&mut self.current, parent);
        if let Err(error) = result {
            self.errors.push(Located {
                error,
                function_depth: self.parents.len() + 1,
            });
        }
        let proto = self.current.nested.len() as i32;
        self.current.nested.push(child.upvalues.names.len() as u8);
        self.current.code.abx(Op::Closure, sreg, proto);
        for name in &child.upvalues.names {
            match self.current.find_local(name) {
                Some((local, block)) => {
                    self.current.code.abc(Op::Move, 0, local, 0);
                    self.current.blocks[block].ref_upvalue = true;
                }
                None => {
                    let up = self.current.upvalues.register_unique(name);
                    self.current.code.abc(Op::GetUpval, 0, up, 0);
                }
            }
        }
        Ok(i32::from(sreg >= reg))
    }

    /// `loadRk`: a string constant as an RK operand, or in a register when the constant
    /// index is too large for one.
    pub(super) fn load_rk(&mut self, reg: &mut i32, name: &'x [u8]) -> R<i32> {
        let k = self.f().string_constant(name)?;
        if k <= MAX_INDEX_RK {
            return Ok(rk_constant(k));
        }
        let r = *reg;
        *reg += 1;
        self.f().code.abx(Op::LoadK, r, k);
        Ok(r)
    }

    /// `compileFuncCallExpr`.
    pub(super) fn call(&mut self, reg: i32, call: &'x Call<'x>, ec: Ec) -> R<i32> {
        let mut func_reg = reg;
        let mut reg = reg;
        if ec.ty == EcType::Local && ec.reg == i32::from(self.f().num_parameters) - 1 {
            func_reg = ec.reg;
            reg = ec.reg;
        }
        let mut argc = call.args.len() as i32;
        if let Some(func) = &call.func {
            reg += self.expr(reg, func, Ec::none(0))?;
        } else if let Some(receiver) = &call.receiver {
            let mut b = reg;
            self.expr_propagated(receiver, &mut reg, &mut b, false)?;
            let c = self.load_rk(&mut reg, call.method.as_deref().unwrap_or_default())?;
            self.f().code.abc(Op::SelfCall, func_reg, b, c);
            reg = (b + 1).max(func_reg + 2);
            argc += 1;
        }
        let mut last_vararg = false;
        for (i, arg) in call.args.iter().enumerate() {
            last_vararg = i == call.args.len() - 1 && Operand::Expr(arg).is_vararg_return();
            if last_vararg {
                self.expr(reg, arg, Ec::none(-2))?;
            } else {
                reg += self.expr(reg, arg, Ec::none(0))?;
            }
        }
        let b = if last_vararg { 0 } else { argc + 1 };
        self.f().code.abc(Op::Call, func_reg, b, ec.varargopt + 2);
        if ec.varargopt == 0 && ec.moves_from(func_reg) {
            self.f().code.abc(Op::Move, ec.reg, func_reg, 0);
            return Ok(1);
        }
        if self.f().reg_top() > func_reg + 2 + ec.varargopt || ec.varargopt < -1 {
            return Ok(0);
        }
        Ok(ec.varargopt + 1)
    }

    /// `compileTableExpr`.
    fn table(&mut self, reg: i32, fields: &'x [Field<'x>], ec: Ec) -> R {
        let table_reg = reg;
        let mut reg = reg + 1;
        self.f().code.abc(Op::NewTable, table_reg, 0, 0);
        let table_pc = self.f().code.last_pc();
        let base = reg;
        let mut array = 0;
        let mut last_vararg = false;
        for (i, field) in fields.iter().enumerate() {
            let last = i == fields.len() - 1;
            let value = Operand::Expr(&field.value);
            match &field.key {
                None => {
                    if last && value.is_vararg_return() {
                        reg += self.expr(reg, &field.value, Ec::none(-2))?;
                        last_vararg = true;
                    } else {
                        reg += self.expr(reg, &field.value, Ec::none(0))?;
                        array += 1;
                    }
                }
                Some(key) => {
                    let origin = reg;
                    let mut b = reg;
                    self.expr_propagated(key, &mut reg, &mut b, true)?;
                    let mut c = reg;
                    self.expr_propagated(&field.value, &mut reg, &mut c, true)?;
                    let op = if matches!(key.kind, ExprKind::String(_)) {
                        Op::SetTableKs
                    } else {
                        Op::SetTable
                    };
                    self.f().code.abc(op, table_reg, b, c);
                    reg = origin;
                }
            }
            let flush = array % FIELDS_PER_FLUSH;
            if (array != 0 && (flush == 0 || last)) || last_vararg {
                reg = base;
                let num = if flush == 0 { FIELDS_PER_FLUSH } else { flush };
                let mut c = (array - 1) / FIELDS_PER_FLUSH + 1;
                let b = if last && value.is_vararg_return() {
                    0
                } else {
                    num
                };
                if c > 511 {
                    c = 0;
                }
                self.f().code.abc(Op::SetList, table_reg, b, c);
                if c == 0 {
                    self.f().code.add(c as u32);
                }
            }
        }
        self.f().code.set_b(table_pc, int2fb(array));
        self.f()
            .code
            .set_c(table_pc, int2fb(fields.len() as i32 - array));
        if ec.moves_from(table_reg) {
            self.f().code.abc(Op::Move, ec.reg, table_reg, 0);
        }
        let _ = reg;
        Ok(())
    }

    /// `compileArithmeticOpExpr`, folding constants first.
    fn arithmetic(&mut self, reg: i32, e: &'x Expr<'x>, ec: Ec) -> R {
        if let Some(value) = const_fold(e) {
            return self.load_number(ec.target(reg), value);
        }
        let ExprKind::Binary { op, lhs, rhs } = &e.kind else {
            return Ok(());
        };
        let op = arithmetic(*op).unwrap_or(Op::Add);
        let a = ec.target(reg);
        let mut reg = reg;
        let mut b = reg;
        self.expr_propagated(lhs, &mut reg, &mut b, true)?;
        let mut c = reg;
        self.expr_propagated(rhs, &mut reg, &mut c, true)?;
        self.f().code.abc(op, a, b, c);
        Ok(())
    }

    /// `compileStringConcatOpExpr`: one `CONCAT` for a whole right-nested chain.
    fn concat(&mut self, reg: i32, lhs: &'x Expr<'x>, rhs: &'x Expr<'x>, ec: Ec) -> R {
        let mut range = 1;
        let mut current = rhs;
        while let ExprKind::Binary {
            op: BinOp::Concat,
            rhs: next,
            ..
        } = &current.kind
        {
            range += 1;
            current = next;
        }
        let a = ec.target(reg);
        let base = reg;
        let mut reg = reg;
        reg += self.expr(reg, lhs, Ec::none(0))?;
        self.expr(reg, rhs, Ec::none(0))?;
        let mut pc = self.f().code.last_pc();
        while pc != 0
            && self
                .f()
                .code
                .at(pc)
                .is_some_and(|inst| is_op(inst, Op::Concat))
        {
            self.f().code.pop();
            pc -= 1;
        }
        self.f().code.abc(Op::Concat, a, base, base + range);
        Ok(())
    }

    /// `compileUnaryOpExpr`.
    fn unary(&mut self, reg: i32, e: &'x Expr<'x>, op: UnOp, operand: &'x Expr<'x>, ec: Ec) -> R {
        let opcode = match op {
            UnOp::Minus => {
                if let Some(value) = const_fold(e) {
                    return self.load_number(ec.target(reg), value);
                }
                Op::Unm
            }
            UnOp::Not => match operand.kind {
                ExprKind::True => {
                    self.f().code.abc(Op::LoadBool, ec.target(reg), 0, 0);
                    return Ok(());
                }
                ExprKind::False | ExprKind::Nil => {
                    self.f().code.abc(Op::LoadBool, ec.target(reg), 1, 0);
                    return Ok(());
                }
                _ => Op::Not,
            },
            UnOp::Len => Op::Len,
        };
        let a = ec.target(reg);
        let mut reg = reg;
        let mut b = reg;
        self.expr_propagated(operand, &mut reg, &mut b, false)?;
        self.f().code.abc(opcode, a, b, 0);
        Ok(())
    }

    /// `compileRelationalOpExprAux`: compare, then jump to `label` unless the test is skipped.
    fn compare(
        &mut self,
        reg: i32,
        op: BinOp,
        lhs: &'x Expr<'x>,
        rhs: &'x Expr<'x>,
        flip: i32,
        label: i32,
    ) -> R {
        let mut reg = reg;
        let mut b = reg;
        self.expr_propagated(lhs, &mut reg, &mut b, true)?;
        let mut c = reg;
        self.expr_propagated(rhs, &mut reg, &mut c, true)?;
        let code = &mut self.f().code;
        match op {
            BinOp::Lt => code.abc(Op::Lt, flip, b, c),
            BinOp::Gt => code.abc(Op::Lt, flip, c, b),
            BinOp::Le => code.abc(Op::Le, flip, b, c),
            BinOp::Ge => code.abc(Op::Le, flip, c, b),
            BinOp::Eq => code.abc(Op::Eq, flip, b, c),
            _ => code.abc(Op::Eq, 1 ^ flip, b, c),
        }
        code.asbx(Op::Jmp, 0, label);
        Ok(())
    }

    /// `compileRelationalOpExpr`: a comparison as a boolean value.
    fn relational(
        &mut self,
        reg: i32,
        op: BinOp,
        lhs: &'x Expr<'x>,
        rhs: &'x Expr<'x>,
        ec: Ec,
    ) -> R {
        let a = ec.target(reg);
        let jump = self.f().new_label();
        self.compare(reg, op, lhs, rhs, 1, jump)?;
        self.f().code.abc(Op::LoadBool, a, 0, 1);
        let pc = self.f().code.last_pc();
        self.f().set_label_pc(jump, pc);
        self.f().code.abc(Op::LoadBool, a, 1, 0);
        Ok(())
    }

    /// `compileBranchCondition`: jumps for an `if`/`while`/`repeat` condition.
    pub(super) fn branch(
        &mut self,
        reg: i32,
        e: &'x Expr<'x>,
        then_label: i32,
        else_label: i32,
        has_next: bool,
    ) -> R {
        let (flip, jump) = if has_next {
            (1, then_label)
        } else {
            (0, else_label)
        };
        match &e.kind {
            ExprKind::False | ExprKind::Nil if !has_next => {
                self.f().code.asbx(Op::Jmp, 0, else_label);
                return Ok(());
            }
            ExprKind::True | ExprKind::Number(_) | ExprKind::String(_) if !has_next => {
                return Ok(());
            }
            ExprKind::Unary {
                op: UnOp::Not,
                operand,
            } => return self.branch(reg, operand, else_label, then_label, !has_next),
            ExprKind::Binary {
                op: BinOp::And,
                lhs,
                rhs,
            } => {
                let next = self.f().new_label();
                self.branch(reg, lhs, next, else_label, false)?;
                let pc = self.f().code.last_pc();
                self.f().set_label_pc(next, pc);
                return self.branch(reg, rhs, then_label, else_label, has_next);
            }
            ExprKind::Binary {
                op: BinOp::Or,
                lhs,
                rhs,
            } => {
                let next = self.f().new_label();
                self.branch(reg, lhs, then_label, next, true)?;
                let pc = self.f().code.last_pc();
                self.f().set_label_pc(next, pc);
                return self.branch(reg, rhs, then_label, else_label, has_next);
            }
            ExprKind::Binary { op, lhs, rhs }
                if matches!(
                    op,
                    BinOp::Gt | BinOp::Lt | BinOp::Ge | BinOp::Le | BinOp::Eq | BinOp::Ne
                ) =>
            {
                return self.compare(reg, *op, lhs, rhs, flip, jump);
            }
            _ => {}
        }
        let mut reg = reg;
        let mut a = reg;
        self.expr_propagated(e, &mut reg, &mut a, false)?;
        self.f().code.abc(Op::Test, a, 0, flip);
        self.f().code.asbx(Op::Jmp, 0, jump);
        Ok(())
    }

    /// `compileLogicalOpExpr`: `and`/`or` as a value.
    fn logical(&mut self, reg: i32, op: BinOp, lhs: &'x Expr<'x>, rhs: &'x Expr<'x>, ec: Ec) -> R {
        let a = ec.target(reg);
        let end = self.f().new_label();
        let t = self.f().new_label();
        let f = self.f().new_label();
        let mut lb = Logical {
            t,
            f,
            e: end,
            b: false,
        };
        let next = self.f().new_label();
        if op == BinOp::And {
            self.logical_part(reg, lhs, ec, next, end, false, &mut lb)?;
        } else {
            self.logical_part(reg, lhs, ec, end, next, true, &mut lb)?;
        }
        let pc = self.f().code.last_pc();
        self.f().set_label_pc(next, pc);
        self.logical_part(reg, rhs, ec, end, end, false, &mut lb)?;
        if lb.b {
            let pc = self.f().code.last_pc();
            self.f().set_label_pc(lb.f, pc);
            self.f().code.abc(Op::LoadBool, a, 0, 1);
            let pc = self.f().code.last_pc();
            self.f().set_label_pc(lb.t, pc);
            self.f().code.abc(Op::LoadBool, a, 1, 0);
        }
        let last = self.f().code.last();
        if is_op(last, Op::Jmp) && super::code::arg_sbx(last) == end {
            self.f().code.pop();
        }
        let pc = self.f().code.last_pc();
        self.f().set_label_pc(end, pc);
        Ok(())
    }

    /// `compileLogicalOpExprAux`.
    #[allow(clippy::too_many_arguments)]
    fn logical_part(
        &mut self,
        reg: i32,
        e: &'x Expr<'x>,
        ec: Ec,
        then_label: i32,
        else_label: i32,
        has_next: bool,
        lb: &mut Logical,
    ) -> R {
        let (mut flip, mut jump) = if has_next {
            (1, then_label)
        } else {
            (0, else_label)
        };
        match &e.kind {
            ExprKind::False => {
                if else_label == lb.e {
                    self.f().code.asbx(Op::Jmp, 0, lb.f);
                    lb.b = true;
                } else {
                    self.f().code.asbx(Op::Jmp, 0, else_label);
                }
                return Ok(());
            }
            ExprKind::Nil => {
                if else_label == lb.e {
                    self.expr(reg, e, ec)?;
                    self.f().code.asbx(Op::Jmp, 0, lb.e);
                } else {
                    self.f().code.asbx(Op::Jmp, 0, else_label);
                }
                return Ok(());
            }
            ExprKind::True => {
                if then_label == lb.e {
                    self.f().code.asbx(Op::Jmp, 0, lb.t);
                    lb.b = true;
                } else {
                    self.f().code.asbx(Op::Jmp, 0, then_label);
                }
                return Ok(());
            }
            ExprKind::Number(_) | ExprKind::String(_) => {
                if then_label == lb.e {
                    self.expr(reg, e, ec)?;
                    self.f().code.asbx(Op::Jmp, 0, lb.e);
                } else {
                    self.f().code.asbx(Op::Jmp, 0, then_label);
                }
                return Ok(());
            }
            ExprKind::Binary {
                op: BinOp::And,
                lhs,
                rhs,
            } => {
                let next = self.f().new_label();
                self.logical_part(reg, lhs, ec, next, else_label, false, lb)?;
                let pc = self.f().code.last_pc();
                self.f().set_label_pc(next, pc);
                return self.logical_part(reg, rhs, ec, then_label, else_label, has_next, lb);
            }
            ExprKind::Binary {
                op: BinOp::Or,
                lhs,
                rhs,
            } => {
                let next = self.f().new_label();
                self.logical_part(reg, lhs, ec, then_label, next, true, lb)?;
                let pc = self.f().code.last_pc();
                self.f().set_label_pc(next, pc);
                return self.logical_part(reg, rhs, ec, then_label, else_label, has_next, lb);
            }
            ExprKind::Binary { op, lhs, rhs }
                if matches!(
                    op,
                    BinOp::Gt | BinOp::Lt | BinOp::Ge | BinOp::Le | BinOp::Eq | BinOp::Ne
                ) =>
            {
                if then_label == else_label {
                    flip ^= 1;
                    jump = lb.t;
                    lb.b = true;
                } else if then_label == lb.e {
                    jump = lb.t;
                    lb.b = true;
                } else if else_label == lb.e {
                    jump = lb.f;
                    lb.b = true;
                }
                return self.compare(reg, *op, lhs, rhs, flip, jump);
            }
            _ => {}
        }
        let a = reg;
        let sreg = ec.target(a);
        let last_and = else_label == lb.e && then_label != else_label;
        let last_or = then_label == lb.e && has_next;
        let local = match &e.kind {
            ExprKind::Ident(name)
                if (last_and || last_or) && self.scope_of(name) == Scope::Local =>
            {
                self.f().find_local(name).map(|(r, _)| r)
            }
            _ => None,
        };
        if let Some(b) = local {
            let op = if sreg == b { Op::Test } else { Op::TestSet };
            self.f().code.abc(op, sreg, b, flip);
        } else if !has_next && then_label == else_label {
            let inner = Ec {
                ty: ec.ty,
                reg: a.max(sreg),
                varargopt: ec.varargopt,
            };
            self.expr(reg, e, inner)?;
            let last = self.f().code.last();
            if is_op(last, Op::Move) && super::code::arg_a(last) == a {
                let pc = self.f().code.last_pc();
                self.f().code.set_a(pc, sreg);
            } else {
                self.f().code.abc(Op::Move, sreg, a, 0);
            }
        } else {
            self.expr(reg, e, Ec::none(0))?;
            if has_next {
                self.f().code.abc(Op::TestSet, sreg, a, flip);
            } else {
                self.f().code.abc(Op::Test, a, 0, flip);
            }
        }
        self.f().code.asbx(Op::Jmp, 0, jump);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_as_go_does() {
        assert_eq!(parse_number(b"12"), 12.0);
        assert_eq!(parse_number(b"0x1F"), 31.0);
        assert_eq!(parse_number(b"012"), 10.0);
        assert_eq!(parse_number(b"08"), 8.0);
        assert_eq!(parse_number(b"1.5e2"), 150.0);
        assert!(parse_number(b"1e\n").is_nan());
        assert!(parse_number(b"1e").is_nan());
        assert_eq!(parse_number(b"99999999999999999999"), 1e20);
        assert_eq!(lua_modulo(-1.0, 2.0), 1.0);
        assert_eq!(lua_modulo(1.0, -2.0), -1.0);
        assert_eq!((int2fb(7), int2fb(8), int2fb(100)), (7, 8, 37));
    }
}
