//! gopher-lua's instruction encoding (`opcode.go`), code store and `patchCode`.
//!
//! The compiler's limits are checked on the code it emits: the highest register an
//! instruction names decides "register overflow", and jump distances decide "too long to
//! jump". So the code is built exactly as gopher-lua builds it, field widths and all.

/// Opcodes; only their identity matters here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    Move,
    MoveN,
    LoadK,
    LoadBool,
    LoadNil,
    GetUpval,
    GetGlobal,
    GetTable,
    GetTableKs,
    SetGlobal,
    SetUpval,
    SetTable,
    SetTableKs,
    NewTable,
    SelfCall,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Unm,
    Not,
    Len,
    Concat,
    Jmp,
    Eq,
    Lt,
    Le,
    Test,
    TestSet,
    Call,
    TailCall,
    Return,
    ForLoop,
    ForPrep,
    TForLoop,
    SetList,
    Close,
    Closure,
    Vararg,
    Nop,
}

pub const MAX_ARG_BX: i32 = (1 << 18) - 1;
pub const MAX_ARG_SBX: i32 = MAX_ARG_BX >> 1;
pub const MAX_ARG_C: i32 = (1 << 9) - 1;
const BIT_RK: i32 = 1 << 8;
pub const MAX_INDEX_RK: i32 = BIT_RK - 1;
/// `Last()` of an empty store.
const INVALID: u32 = u32::MAX;

pub fn opcode(inst: u32) -> u32 {
    inst >> 26
}

pub fn is_op(inst: u32, op: Op) -> bool {
    opcode(inst) == op as u32
}

pub fn arg_a(inst: u32) -> i32 {
    ((inst >> 18) & 0xff) as i32
}

pub fn arg_b(inst: u32) -> i32 {
    (inst & 0x1ff) as i32
}

pub fn arg_c(inst: u32) -> i32 {
    ((inst >> 9) & 0x1ff) as i32
}

pub fn arg_bx(inst: u32) -> i32 {
    (inst & 0x3ffff) as i32
}

pub fn arg_sbx(inst: u32) -> i32 {
    arg_bx(inst) - MAX_ARG_SBX
}

/// gopher-lua's mask also clears the top bits of A; kept as is.
fn set_op(inst: &mut u32, op: Op) {
    *inst = (*inst & 0x3fffff) | ((op as u32) << 26);
}

fn set_a(inst: &mut u32, a: i32) {
    *inst = (*inst & 0xfc03ffff) | (((a & 0xff) as u32) << 18);
}

fn set_b(inst: &mut u32, b: i32) {
    *inst = (*inst & 0xfffffe00) | ((b & 0x1ff) as u32);
}

fn set_c(inst: &mut u32, c: i32) {
    *inst = (*inst & 0xfffc01ff) | (((c & 0x1ff) as u32) << 9);
}

fn set_bx(inst: &mut u32, bx: i32) {
    *inst = (*inst & 0xfffc0000) | ((bx & 0x3ffff) as u32);
}

pub fn rk_constant(index: i32) -> i32 {
    index | BIT_RK
}

pub fn is_constant(rk: i32) -> bool {
    rk & BIT_RK != 0
}

/// gopher-lua's `codeStore`: popped instructions are overwritten by the next ones.
#[derive(Default)]
pub struct CodeStore {
    codes: Vec<u32>,
    pc: usize,
}

impl CodeStore {
    pub fn add(&mut self, inst: u32) {
        if self.pc == self.codes.len() {
            self.codes.push(inst);
        } else {
            self.codes[self.pc] = inst;
        }
        self.pc += 1;
    }

    pub fn abc(&mut self, op: Op, a: i32, b: i32, c: i32) {
        let mut inst = 0;
        set_op(&mut inst, op);
        set_a(&mut inst, a);
        set_b(&mut inst, b);
        set_c(&mut inst, c);
        self.add(inst);
    }

    pub fn abx(&mut self, op: Op, a: i32, bx: i32) {
        let mut inst = 0;
        set_op(&mut inst, op);
        set_a(&mut inst, a);
        set_bx(&mut inst, bx);
        self.add(inst);
    }

    pub fn asbx(&mut self, op: Op, a: i32, sbx: i32) {
        self.abx(op, a, sbx + MAX_ARG_SBX);
    }

    pub fn last_pc(&self) -> i32 {
        self.pc as i32 - 1
    }

    pub fn last(&self) -> u32 {
        match self.pc {
            0 => INVALID,
            pc => self.codes[pc - 1],
        }
    }

    pub fn at(&self, pc: i32) -> Option<u32> {
        usize::try_from(pc)
            .ok()
            .and_then(|pc| self.codes.get(pc).copied())
    }

    pub fn pop(&mut self) {
        self.pc = self.pc.saturating_sub(1);
    }

    fn with(&mut self, pc: i32, f: impl FnOnce(&mut u32)) {
        if let Some(inst) = usize::try_from(pc)
            .ok()
            .and_then(|pc| self.codes.get_mut(pc))
        {
            f(inst);
        }
    }

    pub fn set_op(&mut self, pc: i32, op: Op) {
        self.with(pc, |i| set_op(i, op));
    }

    pub fn set_a(&mut self, pc: i32, a: i32) {
        self.with(pc, |i| set_a(i, a));
    }

    pub fn set_b(&mut self, pc: i32, b: i32) {
        self.with(pc, |i| set_b(i, b));
    }

    pub fn set_c(&mut self, pc: i32, c: i32) {
        self.with(pc, |i| set_c(i, c));
    }

    pub fn set_sbx(&mut self, pc: i32, sbx: i32) {
        self.with(pc, |i| set_bx(i, sbx + MAX_ARG_SBX));
    }

    /// `R(a) .. R(b) := nil`, merged into the previous `LOADNIL` when it ends at `a - 1`.
    pub fn load_nil(&mut self, a: i32, b: i32) {
        let last = self.last();
        if is_op(last, Op::LoadNil) && arg_b(last) + 1 == a {
            self.set_b(self.last_pc(), b);
        } else {
            self.abc(Op::LoadNil, a, b, 0);
        }
    }

    /// `PropagateKMV` / `PropagateMV`: when the last instruction only loaded a constant (if
    /// `constants`) or moved a register into a temporary, drop it and use its source.
    pub fn propagate(
        &mut self,
        top: i32,
        save: &mut i32,
        reg: &mut i32,
        inc: i32,
        constants: bool,
    ) {
        let last = self.last();
        if arg_a(last) >= top {
            if constants && is_op(last, Op::LoadK) && arg_bx(last) <= MAX_INDEX_RK {
                self.pop();
                *save = rk_constant(arg_bx(last));
                return;
            }
            if is_op(last, Op::Move) {
                self.pop();
                *save = arg_b(last);
                return;
            }
        }
        *save = *reg;
        *reg += inc;
    }

    pub fn len(&self) -> usize {
        self.pc
    }
}

/// What `patchCode` finds wrong.
pub enum PatchError {
    JumpTooLong,
    RegisterOverflow,
}

/// gopher-lua's `patchCode`: resolves jumps (following jump chains) and finds the highest
/// register used. `upvalues_of` gives each nested prototype's upvalue count, whose
/// pseudo-instructions follow its `CLOSURE`. `label_pc` maps a label to its pc.
pub fn patch(
    code: &mut CodeStore,
    num_parameters: u8,
    upvalues_of: &[u8],
    label_pc: impl Fn(i32) -> i32,
    max_registers: i32,
) -> Result<(), PatchError> {
    let mut maxreg = 1.max(i32::from(num_parameters));
    let mut moven = 0;
    let len = code.len() as i32;
    let mut pc = 0;
    while pc < len {
        let Some(inst) = code.at(pc) else { break };
        let op = opcode(inst);
        let reg = if op == Op::Closure as u32 {
            let skip = upvalues_of.get(arg_bx(inst) as usize).copied().unwrap_or(0);
            pc += i32::from(skip) + 1;
            moven = 0;
            continue;
        } else if [
            Op::SetGlobal,
            Op::SetUpval,
            Op::Eq,
            Op::Lt,
            Op::Le,
            Op::Test,
            Op::TailCall,
            Op::Return,
            Op::ForPrep,
            Op::ForLoop,
            Op::TForLoop,
            Op::SetList,
            Op::Close,
        ]
        .iter()
        .any(|o| *o as u32 == op)
        {
            None
        } else if op == Op::Call as u32 {
            Some(arg_a(inst) + arg_c(inst) - 2)
        } else if op == Op::Vararg as u32 {
            Some(arg_a(inst) + arg_b(inst) - 1)
        } else if op == Op::SelfCall as u32 {
            Some(arg_a(inst) + 1)
        } else if op == Op::LoadNil as u32 {
            Some(arg_b(inst))
        } else if op == Op::Jmp as u32 {
            let mut distance = 0;
            let mut count = 0;
            let mut jmp = inst;
            while is_op(jmp, Op::Jmp) && count < 5 {
                let d = label_pc(arg_sbx(jmp)) - pc;
                if d > MAX_ARG_SBX {
                    if distance == 0 {
                        return Err(PatchError::JumpTooLong);
                    }
                    break;
                }
                distance = d;
                count += 1;
                match code.at(pc + distance + 1) {
                    Some(next) => jmp = next,
                    None => break,
                }
            }
            if distance == 0 {
                code.set_op(pc, Op::Nop);
            } else {
                code.set_sbx(pc, distance);
            }
            None
        } else {
            Some(arg_a(inst))
        };
        if let Some(reg) = reg {
            maxreg = maxreg.max(reg);
        }
        if op == Op::Move as u32 {
            moven += 1;
        } else {
            if moven > 1 {
                code.set_op(pc - moven, Op::MoveN);
                code.set_c(pc - moven, (moven - 1).min(MAX_ARG_C));
            }
            moven = 0;
        }
        pc += 1;
    }
    if maxreg + 1 > max_registers {
        return Err(PatchError::RegisterOverflow);
    }
    Ok(())
}
