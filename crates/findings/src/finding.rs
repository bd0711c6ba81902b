//! A validation finding: what is wrong, where, and how bad.

use std::fmt;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    /// A setting that works as written but does less than its name suggests: said by `lint`,
    /// never a failure (not even with `--strict`).
    Info,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable identifier, e.g. `trigger-both`, `lua-syntax`.
    pub code: &'static str,
    /// Field path as the API server writes it: `spec.stages[1].trigger.auto.delay`.
    pub path: String,
    pub message: String,
    /// For findings inside an embedded Lua script or CEL rule: 1-based line and column within it.
    #[serde(skip)]
    pub inner: Option<(usize, usize)>,
}

impl Finding {
    pub fn error(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Error,
            code,
            path: path.into(),
            message: message.into(),
            inner: None,
        }
    }

    pub fn warning(
        code: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            severity: Severity::Warning,
            ..Finding::error(code, path, message)
        }
    }

    pub fn info(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Info,
            ..Finding::error(code, path, message)
        }
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.inner = Some((line, column));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] {}: {}",
            self.severity, self.code, self.path, self.message
        )
    }
}
