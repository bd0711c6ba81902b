//! One problem cel-go would report, where, and at which step of `Parse`, `Check`, `Program`.

use cel::common::ast::SourceInfo;

/// The step that fails, which decides the finding's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Syntax,
    Undeclared,
    Type,
    /// `env.Program`: the checked expression cannot be planned.
    Plan,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub stage: Stage,
    /// 1-based line and column (in characters), `None` where cel-go reports `<input>:-1:0`.
    pub at: Option<(usize, usize)>,
    /// cel-go's message.
    pub message: String,
    /// What a Sveltos user should do about it, when we know.
    pub hint: Option<&'static str>,
    /// The name an undeclared reference refers to.
    pub name: Option<String>,
}

impl Issue {
    pub fn new(stage: Stage, at: Option<(usize, usize)>, message: impl Into<String>) -> Self {
        Issue {
            stage,
            at,
            message: message.into(),
            hint: None,
            name: None,
        }
    }

    pub fn with_hint(mut self, hint: Option<&'static str>) -> Self {
        self.hint = hint;
        self
    }
}

/// cel-go sorts what it reports by position, the position-less first; the first is reported
/// in full, the rest counted.
pub fn sort(issues: &mut [Issue]) {
    issues.sort_by_key(|i| i.at.map_or((0, 0), |(l, c)| (l, c)));
}

/// Maps parser offsets to lines and columns.
pub struct Positions<'a> {
    source: &'a str,
    info: &'a SourceInfo,
}

impl<'a> Positions<'a> {
    pub fn new(source: &'a str, info: &'a SourceInfo) -> Self {
        Positions { source, info }
    }

    /// Where expression `id` starts, as cel-go's `GetStartLocation`.
    pub fn of(&self, id: u64) -> Option<(usize, usize)> {
        let (start, _) = self.info.offset_for(id)?;
        Some(line_column(self.source, start as usize))
    }
}

/// 1-based line and column, in characters as cel-go counts them, of the byte at `offset` (the
/// parser records byte offsets).
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let (mut line, mut column) = (1, 1);
    for (_, c) in source.char_indices().take_while(|(i, _)| *i < offset) {
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}
