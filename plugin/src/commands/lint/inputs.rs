//! What a lint run tells about inputs it could not judge: a path that does not exist or cannot
//! be read is *unreadable*; a file that is read but is not UTF-8 YAML is *not YAML*. Both make
//! the run exit 2. The inputs are read by the one reader (`promotion_manifest::Reader`).

use promotion_manifest::{Pos, ReadError, Reason};
use promotion_shared::validation::Severity;

use super::Located;

/// What a run read: files, ClusterPromotions judged, other documents skipped, and inputs it
/// could not judge.
#[derive(Debug, Default)]
pub struct Tally {
    pub files: usize,
    pub promotions: usize,
    pub skipped: usize,
    pub unreadable: usize,
    pub not_yaml: usize,
}

/// The finding that stands for an input the reader could not read or decode.
pub(super) fn read_error(e: &ReadError) -> Located {
    let (pos, code, message) = match &e.reason {
        Reason::Unreadable(reason) => (
            Pos { line: 1, column: 1 },
            "unreadable",
            format!("cannot read: {reason}"),
        ),
        Reason::NotUtf8(pos) => (*pos, "invalid-utf8", "file is not valid UTF-8".to_string()),
        Reason::Yaml(e) => (e.pos, "yaml", format!("not valid YAML: {}", e.message)),
        // lint skips what is not an object rather than asking the reader to refuse it.
        Reason::NotAnObject { .. } => (Pos { line: 1, column: 1 }, "yaml", e.reason.to_string()),
    };
    Located {
        file: e.source.clone(),
        line: pos.line,
        column: pos.column,
        severity: Severity::Error,
        code,
        path: String::new(),
        message,
    }
}
