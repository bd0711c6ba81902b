//! gopher-lua's `funcContext` and `codeBlock`: one function's registers, constants, blocks,
//! local names, labels and pending `goto`s.

use std::collections::HashMap;

use super::code::{CodeStore, MAX_ARG_BX};
use super::CompileError;

pub const MAX_REGISTERS: i32 = 200;
/// No break label (`labelNoJump`).
pub const NO_JUMP: i32 = 0;

pub const VARARG_HAS_ARG: u8 = 1;
pub const VARARG_IS_VARARG: u8 = 2;
pub const VARARG_NEEDS_ARG: u8 = 4;

/// gopher-lua's `varNamePool`: names whose registers start at `offset`.
#[derive(Default)]
pub struct NamePool<'x> {
    pub names: Vec<&'x [u8]>,
    pub offset: i32,
}

impl<'x> NamePool<'x> {
    pub fn find(&self, name: &[u8]) -> Option<i32> {
        self.names
            .iter()
            .rposition(|n| *n == name)
            .map(|i| i as i32 + self.offset)
    }

    pub fn register(&mut self, name: &'x [u8]) -> i32 {
        self.names.push(name);
        self.names.len() as i32 - 1 + self.offset
    }

    pub fn register_unique(&mut self, name: &'x [u8]) -> i32 {
        self.find(name).unwrap_or_else(|| self.register(name))
    }

    pub fn last_index(&self) -> i32 {
        self.offset + self.names.len() as i32
    }
}

/// A label or a `goto` (`gotoLabelDesc`).
pub struct LabelDesc<'x> {
    pub id: i32,
    pub name: &'x [u8],
    pub pc: i32,
    pub line: i32,
    pub active_locals: usize,
}

pub struct Block<'x> {
    pub locals: NamePool<'x>,
    pub break_label: i32,
    pub parent: Option<usize>,
    pub ref_upvalue: bool,
    /// Label name → index into `FuncState::labels`.
    pub labels: HashMap<&'x [u8], usize>,
    pub first_goto: usize,
}

/// Constant table: the index of each distinct string and number, as `ConstIndex` assigns
/// them (numbers compare as floats: NaN never matches, -0 matches 0).
#[derive(Default)]
pub struct Constants<'x> {
    strings: HashMap<&'x [u8], i32>,
    numbers: HashMap<u64, i32>,
    count: i32,
}

impl<'x> Constants<'x> {
    fn next(&mut self) -> i32 {
        self.count += 1;
        self.count - 1
    }
}

pub struct FuncState<'x> {
    pub line_defined: i32,
    pub last_line_defined: i32,
    pub num_parameters: u8,
    pub is_vararg: u8,
    pub constants: Constants<'x>,
    /// Upvalue counts of the prototypes of nested functions, in order.
    pub nested: Vec<u8>,
    pub code: CodeStore,
    pub upvalues: NamePool<'x>,
    pub blocks: Vec<Block<'x>>,
    pub block: usize,
    reg_top: i32,
    label_id: i32,
    pub label_pc: Vec<i32>,
    pub gotos: usize,
    pub unresolved: Vec<Option<usize>>,
    pub labels: Vec<LabelDesc<'x>>,
}

impl<'x> FuncState<'x> {
    pub fn new() -> Self {
        FuncState {
            line_defined: 0,
            last_line_defined: 0,
            num_parameters: 0,
            is_vararg: 0,
            constants: Constants::default(),
            nested: Vec::new(),
            code: CodeStore::default(),
            upvalues: NamePool::default(),
            blocks: vec![Block {
                locals: NamePool::default(),
                break_label: NO_JUMP,
                parent: None,
                ref_upvalue: false,
                labels: HashMap::new(),
                first_goto: 0,
            }],
            block: 0,
            reg_top: 0,
            label_id: 1,
            label_pc: Vec::new(),
            gotos: 0,
            unresolved: Vec::new(),
            labels: Vec::new(),
        }
    }

    fn error(&self, line: i32, message: String) -> CompileError {
        CompileError { line, message }
    }

    pub fn new_label(&mut self) -> i32 {
        self.label_id += 1;
        self.label_id - 1
    }

    pub fn set_label_pc(&mut self, label: i32, pc: i32) {
        let Ok(i) = usize::try_from(label) else {
            return;
        };
        if self.label_pc.len() <= i {
            self.label_pc.resize(i + 1, 0);
        }
        self.label_pc[i] = pc;
    }

    pub fn string_constant(&mut self, s: &'x [u8]) -> Result<i32, CompileError> {
        let index = match self.constants.strings.get(s) {
            Some(&i) => return Ok(i),
            None => self.constants.next(),
        };
        self.constants.strings.insert(s, index);
        self.check_constants(index)
    }

    pub fn number_constant(&mut self, n: f64) -> Result<i32, CompileError> {
        let key = if n == 0.0 { 0 } else { n.to_bits() };
        if !n.is_nan() {
            if let Some(&i) = self.constants.numbers.get(&key) {
                return Ok(i);
            }
        }
        let index = self.constants.next();
        if !n.is_nan() {
            self.constants.numbers.insert(key, index);
        }
        self.check_constants(index)
    }

    fn check_constants(&self, index: i32) -> Result<i32, CompileError> {
        if index > MAX_ARG_BX {
            return Err(self.error(self.line_defined, "too many constants".into()));
        }
        Ok(index)
    }

    pub fn reg_top(&self) -> i32 {
        self.reg_top
    }

    pub fn set_reg_top(&mut self, top: i32) -> Result<(), CompileError> {
        if top > MAX_REGISTERS {
            return Err(self.error(self.line_defined, "too many local variables".into()));
        }
        self.reg_top = top;
        Ok(())
    }

    pub fn register_local(&mut self, name: &'x [u8]) -> Result<i32, CompileError> {
        let block = self.block;
        let index = self.blocks[block].locals.register(name);
        self.set_reg_top(self.reg_top + 1)?;
        Ok(index)
    }

    /// The register of the innermost visible local `name`, and its block.
    pub fn find_local(&self, name: &[u8]) -> Option<(i32, usize)> {
        let mut block = Some(self.block);
        while let Some(b) = block {
            if let Some(index) = self.blocks[b].locals.find(name) {
                return Some((index, b));
            }
            block = self.blocks[b].parent;
        }
        None
    }

    /// Locals declared in `block` and the blocks around it (`LocalVarsCount`).
    pub fn locals_count(&self, block: Option<usize>) -> usize {
        let mut count = 0;
        let mut block = block;
        while let Some(b) = block {
            count += self.blocks[b].locals.names.len();
            block = self.blocks[b].parent;
        }
        count
    }

    pub fn enter_block(&mut self, break_label: i32) {
        let parent = self.block;
        self.blocks.push(Block {
            locals: NamePool {
                names: Vec::new(),
                offset: self.reg_top,
            },
            break_label,
            parent: Some(parent),
            ref_upvalue: false,
            labels: HashMap::new(),
            first_goto: self.gotos,
        });
        self.block = self.blocks.len() - 1;
    }

    /// Emits a `CLOSE` when the block's locals are captured; returns its register or -1.
    pub fn close_upvalues(&mut self) -> i32 {
        let block = &self.blocks[self.block];
        if !block.ref_upvalue {
            return -1;
        }
        let n = block
            .parent
            .map_or(0, |p| self.blocks[p].locals.last_index());
        self.code.abc(super::code::Op::Close, n, 0, 0);
        n
    }

    pub fn leave_block(&mut self) -> Result<i32, CompileError> {
        let closed = self.close_upvalues();
        if self.blocks[self.block].parent.is_some() {
            self.resolve_gotos_with_parent()?;
        }
        if let Some(parent) = self.blocks[self.block].parent {
            self.block = parent;
        }
        self.set_reg_top(self.blocks[self.block].locals.last_index())?;
        Ok(closed)
    }

    pub fn add_goto(&mut self, desc: LabelDesc<'x>) -> usize {
        self.labels.push(desc);
        self.unresolved.push(Some(self.labels.len() - 1));
        self.gotos += 1;
        self.gotos - 1
    }

    pub fn add_label(&mut self, desc: LabelDesc<'x>) -> Result<usize, CompileError> {
        let block = self.block;
        if let Some(&old) = self.blocks[block].labels.get(desc.name) {
            return Err(self.error(
                desc.line + 1,
                format!(
                    "label '{}' already defined on line {}",
                    String::from_utf8_lossy(desc.name),
                    self.labels[old].line
                ),
            ));
        }
        let (id, pc, name) = (desc.id, desc.pc, desc.name);
        self.labels.push(desc);
        let index = self.labels.len() - 1;
        self.blocks[block].labels.insert(name, index);
        self.set_label_pc(id, pc);
        Ok(index)
    }

    /// `ResolveGoto`: fails when the jump enters the scope of a local.
    fn resolve_goto(&mut self, from: usize, to: usize, index: usize) -> Result<(), CompileError> {
        if self.labels[from].active_locals < self.labels[to].active_locals {
            let local = self.blocks[self.block]
                .locals
                .names
                .last()
                .copied()
                .unwrap_or_default();
            return Err(self.error(
                self.labels[to].line + 1,
                format!(
                    "<goto {}> at line {} jumps into the scope of local '{}'",
                    String::from_utf8_lossy(self.labels[to].name),
                    self.labels[from].line,
                    String::from_utf8_lossy(local)
                ),
            ));
        }
        let (pc, id) = (self.labels[from].pc, self.labels[to].id);
        self.code.set_sbx(pc, id);
        if let Some(slot) = self.unresolved.get_mut(index) {
            *slot = None;
        }
        Ok(())
    }

    /// `FindLabel`: resolves goto `index` against a label of `block`, if it has one.
    pub fn find_label(&mut self, block: usize, index: usize) -> Result<bool, CompileError> {
        let Some(Some(goto)) = self.unresolved.get(index).copied() else {
            return Ok(false);
        };
        let Some(&target) = self.blocks[block].labels.get(self.labels[goto].name) else {
            return Ok(false);
        };
        if self.labels[goto].active_locals > self.labels[target].active_locals
            && self.blocks[block].ref_upvalue
        {
            let (pc, n) = (self.labels[goto].pc, self.labels[target].active_locals);
            self.code.set_a(pc - 1, n as i32);
        }
        self.resolve_goto(goto, target, index)?;
        Ok(true)
    }

    /// `ResolveCurrentBlockGotosWithParentBlock`: pending gotos of the block being left now
    /// stand where the block stood, and may find a label there.
    fn resolve_gotos_with_parent(&mut self) -> Result<(), CompileError> {
        let Some(parent) = self.blocks[self.block].parent else {
            return Ok(());
        };
        let active = self.locals_count(Some(parent));
        for i in self.blocks[self.block].first_goto..self.gotos {
            let Some(Some(goto)) = self.unresolved.get(i).copied() else {
                continue;
            };
            if self.labels[goto].active_locals > active {
                if self.blocks[self.block].ref_upvalue {
                    let pc = self.labels[goto].pc;
                    self.code.set_a(pc - 1, active as i32);
                }
                self.labels[goto].active_locals = active;
            }
            self.find_label(parent, i)?;
        }
        Ok(())
    }

    /// `ResolveForwardGoto`: pending gotos of this block (and blocks left) to `label`.
    pub fn resolve_forward_gotos(&mut self, label: usize) -> Result<(), CompileError> {
        for i in self.blocks[self.block].first_goto..self.gotos {
            let Some(Some(goto)) = self.unresolved.get(i).copied() else {
                continue;
            };
            if self.labels[goto].name == self.labels[label].name {
                self.resolve_goto(goto, label, i)?;
            }
        }
        Ok(())
    }

    /// `CheckUnresolvedGoto`, at the end of the function.
    pub fn check_unresolved_gotos(&self) -> Result<(), CompileError> {
        let first = self.blocks[self.block].first_goto;
        match self.unresolved.iter().skip(first).flatten().next() {
            Some(&goto) => {
                let goto = &self.labels[goto];
                Err(self.error(
                    self.last_line_defined,
                    format!(
                        "no visible label '{}' for <goto> at line {}",
                        String::from_utf8_lossy(goto.name),
                        goto.line
                    ),
                ))
            }
            None => Ok(()),
        }
    }
}
