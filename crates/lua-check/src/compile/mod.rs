//! gopher-lua v1.1.2's `lua.Compile` (`compile.go`), which `DoString` runs after parsing and
//! before executing anything. A port, not an approximation: its errors depend on the code it
//! generates (the highest register an instruction uses, the length of jumps), so the code is
//! generated the same way, register for register.
//!
//! Errors it can raise, with gopher-lua's wording and line:
//! - `no loop to break` (line of the `break`);
//! - `cannot use '...' outside a vararg function` (line of the `...`);
//! - `no visible label 'x' for <goto> at line N` (last line of the function);
//! - `<goto x> at line N jumps into the scope of local 'y'` (line after the label);
//! - `label 'x' already defined on line N` (line after the second label);
//! - `too many local variables` (more than 200 active), `register overflow` (more than 200
//!   parameters), `register overflow(too many local variables)` (an instruction names a
//!   register above 199), `too many constants`, `too long to jump.` (line where the function
//!   starts; 0 for the main chunk).
//!
//! gopher-lua stops at the first error. Here an error stops only the function it occurs in:
//! the enclosing function carries on as if that function had compiled, so the errors after
//! the first come from other functions, which an error in one function cannot cause.

mod code;
mod expr;
mod scope;
mod stmt;

use super::ast::{Function, Name, Stmt};
use scope::FuncState;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub line: i32,
    pub message: String,
}

/// A compile error and how deeply nested the function it occurred in is (0: the chunk itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub error: CompileError,
    pub function_depth: usize,
}

/// Compiles a chunk as `lua.Compile` does; the first error is gopher-lua's.
pub fn compile(chunk: &[Stmt<'_>]) -> Vec<Located> {
    let mut c = Compiler {
        current: FuncState::new(),
        parents: Vec::new(),
        errors: Vec::new(),
    };
    let last_line = chunk.last().map_or(0, |s| s.end_line() + 1);
    let body = Body {
        params: &[],
        vararg: true,
        stmts: chunk,
        line: 0,
        last_line,
    };
    if let Err(error) = c.function(&body, false) {
        c.errors.push(Located {
            error,
            function_depth: 0,
        });
    }
    c.errors
}

/// A function to compile: the chunk, or a function expression.
pub struct Body<'x, 'a> {
    pub params: &'x [Name<'a>],
    pub vararg: bool,
    pub stmts: &'x [Stmt<'a>],
    pub line: i32,
    pub last_line: i32,
}

impl<'x, 'a> Body<'x, 'a> {
    pub fn of(f: &'x Function<'a>) -> Self {
        Body {
            params: &f.params,
            vararg: f.vararg,
            stmts: &f.body,
            line: f.line,
            last_line: f.last_line,
        }
    }
}

pub struct Compiler<'x> {
    current: FuncState<'x>,
    /// Enclosing functions, innermost last.
    parents: Vec<FuncState<'x>>,
    errors: Vec<Located>,
}

/// Where a name resolves (`getIdentRefType`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    Global,
    Upvalue,
    Local,
}

impl<'x> Compiler<'x> {
    fn scope_of(&self, name: &[u8]) -> Scope {
        if self.current.find_local(name).is_some() {
            Scope::Local
        } else if self
            .parents
            .iter()
            .rev()
            .any(|f| f.find_local(name).is_some())
        {
            Scope::Upvalue
        } else {
            Scope::Global
        }
    }

    /// `compileFunctionExpr` on the current (fresh) function state.
    fn function(&mut self, body: &Body<'x, '_>, method: bool) -> Result<(), CompileError> {
        let f = &mut self.current;
        f.line_defined = body.line;
        f.last_line_defined = if body.last_line == 0 {
            body.line
        } else {
            body.last_line
        };
        if body.params.len() > scope::MAX_REGISTERS as usize {
            return Err(CompileError {
                line: f.line_defined,
                message: "register overflow".into(),
            });
        }
        f.num_parameters = body.params.len() as u8;
        if method {
            f.num_parameters = f.num_parameters.wrapping_add(1);
            f.register_local(b"self")?;
        }
        for p in body.params {
            self.current.register_local(param_name(p))?;
        }
        if body.vararg {
            self.current.is_vararg = scope::VARARG_HAS_ARG | scope::VARARG_NEEDS_ARG;
            if !self.parents.is_empty() {
                self.current.register_local(b"arg")?;
            }
            self.current.is_vararg |= scope::VARARG_IS_VARARG;
        }
        self.chunk(body.stmts, false)?;
        self.current.code.abc(code::Op::Return, 0, 1, 0);
        self.current.check_unresolved_gotos()?;
        let f = &mut self.current;
        let line = f.line_defined;
        let label_pc = &f.label_pc;
        let result = code::patch(
            &mut f.code,
            f.num_parameters,
            &f.nested,
            |label| {
                usize::try_from(label)
                    .ok()
                    .and_then(|i| label_pc.get(i).copied())
                    .unwrap_or(0)
            },
            scope::MAX_REGISTERS,
        );
        let message = match result {
            Ok(()) => return Ok(()),
            Err(code::PatchError::JumpTooLong) => "too long to jump.",
            Err(code::PatchError::RegisterOverflow) => {
                "register overflow(too many local variables)"
            }
        };
        Err(CompileError {
            line,
            message: message.into(),
        })
    }
}

/// Parameter names live as long as the tree; so do the compiler's borrowed names.
fn param_name<'x>(p: &'x Name<'_>) -> &'x [u8] {
    &p.text
}

#[cfg(test)]
mod tests {
    use super::super::lexer::Scanner;
    use super::super::parser::parse;
    use super::*;

    fn first_error(src: &str) -> Option<(i32, String)> {
        let chunk = parse(&mut Scanner::new(src.as_bytes()), 200).expect(src);
        compile(&chunk)
            .into_iter()
            .next()
            .map(|l| (l.error.line, l.error.message))
    }

    /// The L1 cases of lint-parity.md, as gopher-lua v1.1.2 reports them (each script there
    /// is followed by a 3-line `evaluate`, hence line 5 for the chunk's last line).
    #[test]
    fn reports_gopher_lua_compile_errors() {
        let evaluate = "\nfunction evaluate()\n  return {healthy = true}\nend";
        let cases = [
            (
                "goto done",
                5,
                "no visible label 'done' for <goto> at line 1",
            ),
            (
                "do goto a end do ::a:: end",
                5,
                "no visible label 'a' for <goto> at line 1",
            ),
            ("do break end", 1, "no loop to break"),
            (
                "local f = function() return ... end",
                1,
                "cannot use '...' outside a vararg function",
            ),
            (
                "local a = function(...) return function() return ... end end",
                1,
                "cannot use '...' outside a vararg function",
            ),
            ("::a:: ::a::", 2, "label 'a' already defined on line 1"),
        ];
        for (script, line, message) in cases {
            let src = format!("{script}{evaluate}");
            assert_eq!(
                first_error(&src),
                Some((line, message.to_string())),
                "{src}"
            );
        }
        let src = format!("goto skip\nlocal y = 1\n::skip::\nprint(y){evaluate}");
        assert_eq!(
            first_error(&src),
            Some((
                4,
                "<goto skip> at line 1 jumps into the scope of local 'y'".to_string()
            ))
        );
    }

    #[test]
    fn accepts_gotos_gopher_lua_accepts() {
        for src in [
            "for i = 1, 3 do if i == 2 then goto continue end local x = i ::continue:: end",
            "do goto a local x = 1 ::a:: end",
            "::top:: local x = 1 if x then goto top end",
            "while true do break end",
            "repeat local x = 1 until x",
            "local function f(...) local a, b = ... return ... end",
            "return ...",
        ] {
            assert_eq!(first_error(src), None, "{src}");
        }
    }

    #[test]
    fn counts_registers_as_gopher_lua() {
        let locals = |n: usize| {
            let names: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
            format!("local {}", names.join(", "))
        };
        assert_eq!(first_error(&locals(200)), None);
        assert_eq!(
            first_error(&locals(201)),
            Some((0, "too many local variables".to_string()))
        );
        let args = |n: usize| format!("f({})", vec!["1"; n].join(", "));
        // The function is in register 0, the arguments in 1..=n.
        assert_eq!(first_error(&args(199)), None);
        assert_eq!(
            first_error(&args(200)),
            Some((0, "register overflow(too many local variables)".to_string()))
        );
        let params: Vec<String> = (0..201).map(|i| format!("p{i}")).collect();
        let src = format!("local f = function({}) end", params.join(", "));
        assert_eq!(
            first_error(&src),
            Some((1, "register overflow".to_string()))
        );
    }

    #[test]
    fn an_error_stops_only_its_own_function() {
        let src = "local function a() break end\nlocal function b() goto x end\ndo break end";
        let errors: Vec<(i32, String)> =
            compile(&parse(&mut Scanner::new(src.as_bytes()), 200).unwrap())
                .into_iter()
                .map(|l| (l.error.line, l.error.message))
                .collect();
        assert_eq!(
            errors,
            [
                (1, "no loop to break".to_string()),
                (2, "no visible label 'x' for <goto> at line 2".to_string()),
                (3, "no loop to break".to_string()),
            ]
        );
    }
}
