//! Statements: `compileChunk`, `compileBlock`, `compileStmt` and the statement compilers of
//! `compile.go`, in the same order of operations (labels, registers and blocks are allocated
//! exactly when gopher-lua allocates them).

use super::super::ast::{Expr, ExprKind, FuncName, Function, Name, Stmt, StmtKind};
use super::code::{is_constant, Op};
use super::expr::{Ec, EcType, Operand};
use super::scope::{LabelDesc, NO_JUMP};
use super::{CompileError, Compiler, Scope};

type R<T = ()> = Result<T, CompileError>;

/// One assignment target (`assigncontext`).
struct Target {
    ec: Ec,
    key_rk: i32,
    value_rk: i32,
    key_is_string: bool,
    needs_move: bool,
}

impl<'x> Compiler<'x> {
    pub(super) fn chunk(&mut self, stmts: &'x [Stmt<'x>], until_follows: bool) -> R {
        for (i, s) in stmts.iter().enumerate() {
            let last = stmts[i + 1..]
                .iter()
                .all(|s| matches!(s.kind, StmtKind::Label(_)));
            self.stmt(s, last && !until_follows)?;
        }
        Ok(())
    }

    /// `compileBlock`: a block of its own, unless empty.
    fn block(&mut self, stmts: &'x [Stmt<'x>]) -> R {
        if stmts.is_empty() {
            return Ok(());
        }
        self.current.enter_block(NO_JUMP);
        self.chunk(stmts, false)?;
        self.current.leave_block()?;
        Ok(())
    }

    fn stmt(&mut self, s: &'x Stmt<'x>, is_last: bool) -> R {
        match &s.kind {
            StmtKind::Assign { lhs, rhs } => {
                let lhs: Vec<&'x Expr<'x>> = lhs.iter().collect();
                let rhs: Vec<Operand<'x>> = rhs.iter().map(Operand::Expr).collect();
                self.assign(&lhs, &rhs)
            }
            StmtKind::Local { names, exprs } => self.local(names, exprs),
            StmtKind::Call(e) => {
                let reg = self.current.reg_top();
                if let ExprKind::Call(call) = &e.kind {
                    self.call(reg, call, Ec::none(-1))?;
                }
                Ok(())
            }
            StmtKind::Do(body) => {
                self.current.enter_block(NO_JUMP);
                self.chunk(body, false)?;
                self.current.leave_block()?;
                Ok(())
            }
            StmtKind::While { cond, body } => self.while_loop(cond, body),
            StmtKind::Repeat { body, cond } => self.repeat(body, cond),
            StmtKind::FunctionDef { name, func } => self.function_def(name, func),
            StmtKind::Return(values) => self.return_stmt(values),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(cond, then, otherwise),
            StmtKind::Break => self.break_stmt(s.line),
            StmtKind::NumericFor {
                name,
                init,
                limit,
                step,
                body,
            } => self.numeric_for(&name.text, init, limit, step.as_ref(), body),
            StmtKind::GenericFor { names, exprs, body } => {
                let names: Vec<&'x [u8]> = names.iter().map(|n| &*n.text).collect();
                self.generic_for(&names, exprs, body)
            }
            StmtKind::Label(name) => self.label(name, s.line, is_last),
            StmtKind::Goto(name) => self.goto(name, s.line),
        }
    }

    fn assign(&mut self, lhs: &[&'x Expr<'x>], rhs: &[Operand<'x>]) -> R {
        // Left: where each value goes.
        let mut reg = self.current.reg_top();
        let mut targets = Vec::with_capacity(lhs.len());
        for target in lhs {
            match &target.kind {
                ExprKind::Ident(name) => {
                    let scope = self.scope_of(name);
                    let mut ec = Ec {
                        ty: EcType::from(scope),
                        reg: super::expr::REG_NOT_DEFINED,
                        varargopt: 0,
                    };
                    match scope {
                        Scope::Global => {
                            self.current.string_constant(name)?;
                        }
                        Scope::Upvalue => {
                            self.current.upvalues.register_unique(name);
                        }
                        Scope::Local => {
                            ec.reg = self.current.find_local(name).map_or(-1, |(r, _)| r);
                        }
                    }
                    targets.push(Target {
                        ec,
                        key_rk: 0,
                        value_rk: 0,
                        key_is_string: false,
                        needs_move: false,
                    });
                }
                ExprKind::Index { object, key } => {
                    let mut t = Target {
                        ec: Ec {
                            ty: EcType::Table,
                            reg: super::expr::REG_NOT_DEFINED,
                            varargopt: 0,
                        },
                        key_rk: 0,
                        value_rk: 0,
                        key_is_string: matches!(key.kind, ExprKind::String(_)),
                        needs_move: false,
                    };
                    self.expr_propagated(object, &mut reg, &mut t.ec.reg, true)?;
                    t.key_rk = reg;
                    reg += self.expr(reg, key, Ec::none(0))?;
                    targets.push(t);
                }
                // The grammar only makes names and indexes assignable.
                _ => {}
            }
        }
        // Right: the values.
        let (names, exprs) = (targets.len(), rhs.len());
        let mut assigned = 0;
        while assigned < names {
            let operand = if assigned >= exprs {
                Operand::Nil
            } else if rhs[assigned].is_vararg_return() && exprs as i64 - assigned as i64 - 1 <= 0 {
                let varargopt = names as i32 - assigned as i32 - 1;
                let start = reg;
                let inc = self.operand(reg, rhs[assigned], Ec::none(varargopt))?;
                reg += inc;
                for (i, t) in targets
                    .iter_mut()
                    .enumerate()
                    .skip(assigned)
                    .take(inc.max(0) as usize)
                {
                    t.needs_move = true;
                    if t.ec.ty == EcType::Table {
                        t.value_rk = start + (i - assigned) as i32;
                    }
                }
                assigned = names;
                continue;
            } else {
                rhs[assigned]
            };
            let index = reg;
            let ec = targets[assigned].ec;
            let inc = self.operand(reg, operand, ec)?;
            let t = &mut targets[assigned];
            if ec.ty == EcType::Table {
                if operand.is_logical() {
                    t.value_rk = index;
                    reg += inc;
                } else {
                    let top = self.current.reg_top();
                    self.current
                        .code
                        .propagate(top, &mut t.value_rk, &mut reg, inc, true);
                }
            } else {
                t.needs_move = inc != 0;
                reg += inc;
            }
            assigned += 1;
        }
        let mut reg_right = reg - 1;
        for (i, extra) in rhs.iter().enumerate().skip(assigned) {
            let varargopt = if i != exprs - 1 { 0 } else { -1 };
            reg += self.operand(reg, *extra, Ec::none(varargopt))?;
        }
        // Stores, last target first.
        for (i, t) in targets.iter().enumerate().rev() {
            let name = match &lhs[i].kind {
                ExprKind::Ident(name) => Some(&**name),
                _ => None,
            };
            match t.ec.ty {
                EcType::Local => {
                    if t.needs_move {
                        let local = name
                            .and_then(|n| self.current.find_local(n))
                            .map_or(-1, |(r, _)| r);
                        self.current.code.abc(Op::Move, local, reg_right, 0);
                        reg_right -= 1;
                    }
                }
                EcType::Global => {
                    let k = self.current.string_constant(name.unwrap_or_default())?;
                    self.current.code.abx(Op::SetGlobal, reg_right, k);
                    reg_right -= 1;
                }
                EcType::Upvalue => {
                    let up = self
                        .current
                        .upvalues
                        .register_unique(name.unwrap_or_default());
                    self.current.code.abc(Op::SetUpval, reg_right, up, 0);
                    reg_right -= 1;
                }
                EcType::Table => {
                    let op = if t.key_is_string {
                        Op::SetTableKs
                    } else {
                        Op::SetTable
                    };
                    self.current.code.abc(op, t.ec.reg, t.key_rk, t.value_rk);
                    if !is_constant(t.value_rk) {
                        reg_right -= 1;
                    }
                }
                EcType::Vararg | EcType::Method | EcType::None => {}
            }
        }
        Ok(())
    }

    /// `compileRegAssignment`: values into consecutive registers from `reg`.
    fn reg_assignment(
        &mut self,
        names: usize,
        exprs: &'x [Expr<'x>],
        mut reg: i32,
        nvars: i32,
    ) -> R {
        let count = exprs.len();
        let mut assigned = 0;
        while assigned < names && assigned < count {
            let e = &exprs[assigned];
            if Operand::Expr(e).is_vararg_return() && count as i64 - assigned as i64 - 1 <= 0 {
                let varargopt = nvars - assigned as i32;
                let ec = Ec {
                    ty: EcType::Vararg,
                    reg,
                    varargopt: varargopt - 1,
                };
                self.expr(reg, e, ec)?;
                reg += varargopt;
                assigned = names;
            } else {
                let ec = Ec {
                    ty: EcType::Local,
                    reg,
                    varargopt: 0,
                };
                self.expr(reg, e, ec)?;
                reg += 1;
                assigned += 1;
            }
        }
        if names > assigned {
            let rest = names as i32 - assigned as i32 - 1;
            self.current.code.load_nil(reg, reg + rest);
            reg += rest;
        }
        for (i, e) in exprs.iter().enumerate().skip(assigned) {
            let varargopt = if i != count - 1 { 0 } else { -1 };
            let ec = Ec {
                ty: EcType::None,
                reg,
                varargopt,
            };
            reg += self.expr(reg, e, ec)?;
        }
        Ok(())
    }

    fn local(&mut self, names: &'x [Name<'x>], exprs: &'x [Expr<'x>]) -> R {
        let reg = self.current.reg_top();
        if names.len() == 1 && exprs.len() == 1 && matches!(exprs[0].kind, ExprKind::Function(_)) {
            // `local function f` sees itself.
            self.current.register_local(&names[0].text)?;
            return self.reg_assignment(1, exprs, reg, 1);
        }
        self.reg_assignment(names.len(), exprs, reg, names.len() as i32)?;
        for n in names {
            self.current.register_local(&n.text)?;
        }
        Ok(())
    }

    fn return_stmt(&mut self, values: &'x [Expr<'x>]) -> R {
        let mut reg = self.current.reg_top();
        let a = reg;
        if values.len() == 1 {
            match &values[0].kind {
                ExprKind::Ident(name) => {
                    if let Some((local, _)) = self.current.find_local(name) {
                        self.current.code.abc(Op::Return, local, 2, 0);
                        return Ok(());
                    }
                }
                ExprKind::Call(call) => {
                    if call.adjusted {
                        self.expr(reg, &values[0], Ec::none(0))?;
                    } else {
                        self.expr(reg, &values[0], Ec::none(-2))?;
                        let pc = self.current.code.last_pc();
                        self.current.code.set_op(pc, Op::TailCall);
                    }
                    self.current.code.abc(Op::Return, a, 0, 0);
                    return Ok(());
                }
                _ => {}
            }
        }
        let mut last_is_vararg = false;
        for (i, e) in values.iter().enumerate() {
            if i == values.len() - 1 && Operand::Expr(e).is_vararg_return() {
                self.expr(reg, e, Ec::none(-2))?;
                last_is_vararg = true;
            } else {
                reg += self.expr(reg, e, Ec::none(0))?;
            }
        }
        let count = if last_is_vararg { 0 } else { reg - a + 1 };
        self.current.code.abc(Op::Return, a, count, 0);
        Ok(())
    }

    fn if_stmt(
        &mut self,
        cond: &'x Expr<'x>,
        then: &'x [Stmt<'x>],
        otherwise: &'x [Stmt<'x>],
    ) -> R {
        let then_label = self.current.new_label();
        let else_label = self.current.new_label();
        let end_label = self.current.new_label();
        let reg = self.current.reg_top();
        self.branch(reg, cond, then_label, else_label, false)?;
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(then_label, pc);
        self.block(then)?;
        if !otherwise.is_empty() {
            self.current.code.asbx(Op::Jmp, 0, end_label);
        }
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(else_label, pc);
        if !otherwise.is_empty() {
            self.block(otherwise)?;
            let pc = self.current.code.last_pc();
            self.current.set_label_pc(end_label, pc);
        }
        Ok(())
    }

    fn while_loop(&mut self, cond: &'x Expr<'x>, body: &'x [Stmt<'x>]) -> R {
        let then_label = self.current.new_label();
        let else_label = self.current.new_label();
        let cond_label = self.current.new_label();
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(cond_label, pc);
        let reg = self.current.reg_top();
        self.branch(reg, cond, then_label, else_label, false)?;
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(then_label, pc);
        self.current.enter_block(else_label);
        self.chunk(body, false)?;
        self.current.close_upvalues();
        self.current.code.asbx(Op::Jmp, 0, cond_label);
        self.current.leave_block()?;
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(else_label, pc);
        Ok(())
    }

    fn repeat(&mut self, body: &'x [Stmt<'x>], cond: &'x Expr<'x>) -> R {
        let init_label = self.current.new_label();
        let then_label = self.current.new_label();
        let else_label = self.current.new_label();
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(init_label, pc);
        self.current.set_label_pc(else_label, pc);
        self.current.enter_block(then_label);
        self.chunk(body, true)?;
        let reg = self.current.reg_top();
        self.branch(reg, cond, then_label, else_label, false)?;
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(then_label, pc);
        let closed = self.current.leave_block()?;
        if closed > -1 {
            let label = self.current.new_label();
            self.current.code.asbx(Op::Jmp, 0, label);
            let pc = self.current.code.last_pc();
            self.current.set_label_pc(else_label, pc);
            self.current.code.abc(Op::Close, closed, 0, 0);
            self.current.code.asbx(Op::Jmp, 0, init_label);
            let pc = self.current.code.last_pc();
            self.current.set_label_pc(label, pc);
        }
        Ok(())
    }

    fn break_stmt(&mut self, line: i32) -> R {
        let mut block = Some(self.current.block);
        while let Some(b) = block {
            let (label, refs, parent) = {
                let blk = &self.current.blocks[b];
                (blk.break_label, blk.ref_upvalue, blk.parent)
            };
            if label != NO_JUMP {
                if refs {
                    let n = parent.map_or(0, |p| self.current.blocks[p].locals.last_index());
                    self.current.code.abc(Op::Close, n, 0, 0);
                }
                self.current.code.asbx(Op::Jmp, 0, label);
                return Ok(());
            }
            block = parent;
        }
        Err(CompileError {
            line,
            message: "no loop to break".into(),
        })
    }

    fn function_def(&mut self, name: &'x FuncName<'x>, func: &'x Function<'x>) -> R {
        match (&name.func, &name.receiver) {
            (None, Some(receiver)) => {
                let mut reg = self.current.reg_top();
                let mut table = 0;
                self.expr_propagated(receiver, &mut reg, &mut table, true)?;
                let method = name.method.as_deref().unwrap_or_default();
                let key = self.load_rk(&mut reg, method)?;
                self.function_expr(reg, func, Ec::method())?;
                self.current.code.abc(Op::SetTable, table, key, reg);
                Ok(())
            }
            (Some(target), _) => self.assign(&[target], &[Operand::Function(func)]),
            (None, None) => Ok(()),
        }
    }

    fn numeric_for(
        &mut self,
        name: &'x [u8],
        init: &'x Expr<'x>,
        limit: &'x Expr<'x>,
        step: Option<&'x Expr<'x>>,
        body: &'x [Stmt<'x>],
    ) -> R {
        let end_label = self.current.new_label();
        self.current.enter_block(end_label);
        let reg = self.current.reg_top();
        let index = self.current.register_local(b"(for index)")?;
        self.expr(reg, init, Ec::local(index))?;
        let reg = self.current.reg_top();
        let rlimit = self.current.register_local(b"(for limit)")?;
        self.expr(reg, limit, Ec::local(rlimit))?;
        let reg = self.current.reg_top();
        let rstep = self.current.register_local(b"(for step)")?;
        match step {
            Some(step) => {
                self.expr(reg, step, Ec::local(rstep))?;
            }
            None => {
                self.operand(reg, Operand::Number(1.0), Ec::local(rstep))?;
            }
        }
        self.current.code.asbx(Op::ForPrep, index, 0);
        self.current.register_local(name)?;
        let body_pc = self.current.code.last_pc();
        self.chunk(body, false)?;
        self.current.leave_block()?;
        let loop_pc = self.current.code.last_pc();
        self.current
            .code
            .asbx(Op::ForLoop, index, body_pc - (loop_pc + 1));
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(end_label, pc);
        self.current.code.set_sbx(body_pc, loop_pc - body_pc);
        Ok(())
    }

    fn generic_for(
        &mut self,
        names: &[&'x [u8]],
        exprs: &'x [Expr<'x>],
        body: &'x [Stmt<'x>],
    ) -> R {
        let end_label = self.current.new_label();
        let body_label = self.current.new_label();
        let loop_label = self.current.new_label();
        self.current.enter_block(end_label);
        let generator = self.current.register_local(b"(for generator)")?;
        self.current.register_local(b"(for state)")?;
        self.current.register_local(b"(for control)")?;
        let reg = self.current.reg_top() - 3;
        self.reg_assignment(names.len(), exprs, reg, 3)?;
        self.current.code.asbx(Op::Jmp, 0, loop_label);
        for n in names {
            self.current.register_local(n)?;
        }
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(body_label, pc);
        self.chunk(body, false)?;
        self.current.leave_block()?;
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(loop_label, pc);
        self.current
            .code
            .abc(Op::TForLoop, generator, 0, names.len() as i32);
        self.current.code.asbx(Op::Jmp, 0, body_label);
        let pc = self.current.code.last_pc();
        self.current.set_label_pc(end_label, pc);
        Ok(())
    }

    fn label(&mut self, name: &'x [u8], line: i32, is_last: bool) -> R {
        let id = self.current.new_label();
        let pc = self.current.code.last_pc();
        let active = self.current.locals_count(Some(self.current.block));
        let label = self.current.add_label(LabelDesc {
            id,
            name,
            pc,
            line,
            active_locals: active,
        })?;
        if is_last {
            let parent = self.current.blocks[self.current.block].parent;
            self.current.labels[label].active_locals = self.current.locals_count(parent);
        }
        self.current.resolve_forward_gotos(label)
    }

    fn goto(&mut self, name: &'x [u8], line: i32) -> R {
        self.current.code.abc(Op::Close, 0, 0, 0);
        self.current.code.asbx(Op::Jmp, 0, NO_JUMP);
        let pc = self.current.code.last_pc();
        let active = self.current.locals_count(Some(self.current.block));
        let index = self.current.add_goto(LabelDesc {
            id: -1,
            name,
            pc,
            line,
            active_locals: active,
        });
        let block = self.current.block;
        self.current.find_label(block, index)?;
        Ok(())
    }
}
