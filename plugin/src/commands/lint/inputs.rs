//! Which files a lint run reads, and what it tells about inputs it could not judge: a path that
//! does not exist or cannot be read is *unreadable*; a file that is read but is not UTF-8 YAML
//! is *not YAML*. Both make the run exit 2.

use std::io::Read;
use std::path::{Path, PathBuf};

use promotion_manifest::Pos;
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

/// Files to lint for one command-line input: a named file is linted whatever its extension;
/// a directory contributes its manifests, sorted, recursively.
pub(super) fn expand(input: &Path, located: &mut Vec<Located>, tally: &mut Tally) -> Vec<PathBuf> {
    if input.as_os_str() == "-" || input.is_file() {
        return vec![input.to_path_buf()];
    }
    if !input.is_dir() {
        let reason = match std::fs::metadata(input) {
            Err(e) => io_reason(&e),
            Ok(_) => "not a file or directory".to_string(),
        };
        tally.unreadable += 1;
        located.push(read_error(&input.display().to_string(), &reason));
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut pending = vec![input.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                tally.unreadable += 1;
                located.push(read_error(&dir.display().to_string(), &io_reason(&e)));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if is_manifest(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// `No such file or directory (os error 2)` without the OS error number.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

pub(super) fn read_error(file: &str, reason: &str) -> Located {
    Located {
        file: file.to_string(),
        line: 1,
        column: 1,
        severity: Severity::Error,
        code: "unreadable",
        path: String::new(),
        message: format!("cannot read: {reason}"),
    }
}

/// A file's display name and bytes (`-` is stdin); a read failure is recorded as unreadable.
pub(super) fn read(
    path: &Path,
    located: &mut Vec<Located>,
    tally: &mut Tally,
) -> Option<(String, Vec<u8>)> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        let read = std::io::stdin().lock().read_to_end(&mut buf);
        ("<stdin>".to_string(), read.map(|_| buf))
    } else {
        (path.display().to_string(), std::fs::read(path))
    };
    tally.files += 1;
    match bytes {
        Ok(b) => Some((name, b)),
        Err(e) => {
            tally.unreadable += 1;
            located.push(read_error(&name, &io_reason(&e)));
            None
        }
    }
}

pub(super) fn not_yaml(file: &str, pos: Pos, code: &'static str, message: String) -> Located {
    Located {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        severity: Severity::Error,
        code,
        path: String::new(),
        message,
    }
}
