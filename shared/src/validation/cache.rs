//! Memo of script and rule verdicts. The API server sends the whole object on every write (an
//! approval, an annotation, a finalizer), so the same Lua and CEL text is judged again and again;
//! parsing it dominates the engine's cost. A verdict depends only on the text, so it is kept,
//! keyed by the exact text, within a byte budget.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

// Every text of every review is looked up here: foldhash, seeded per process, costs a fraction
// of the standard SipHash per byte.
use foldhash::quality::RandomState;

use super::{FieldPath, Finding, Severity};

/// Texts above this size are judged every time (they are rare, and would crowd the memo).
const MAX_TEXT_BYTES: usize = 8 * 1024;
/// Total text kept; the memo starts over when it is full.
const BUDGET_BYTES: usize = 4 * 1024 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Lua,
    Cel,
}

#[derive(Clone)]
struct Verdict {
    severity: Severity,
    code: &'static str,
    message: String,
    inner: Option<(usize, usize)>,
}

#[derive(Default)]
struct Memo {
    /// One map per language, so that a lookup borrows the text instead of building a key.
    lua: HashMap<String, Vec<Verdict>, RandomState>,
    cel: HashMap<String, Vec<Verdict>, RandomState>,
    bytes: usize,
}

impl Memo {
    fn entries(&mut self, language: Language) -> &mut HashMap<String, Vec<Verdict>, RandomState> {
        match language {
            Language::Lua => &mut self.lua,
            Language::Cel => &mut self.cel,
        }
    }
}

fn memo() -> &'static Mutex<Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

/// Findings for `text` at `path`: from the memo, or from `judge` (then remembered).
pub fn judged(
    language: Language,
    text: &str,
    path: &FieldPath,
    out: &mut Vec<Finding>,
    judge: impl FnOnce(&str, &FieldPath, &mut Vec<Finding>),
) {
    let cacheable = text.len() <= MAX_TEXT_BYTES;
    if cacheable {
        if let Ok(mut m) = memo().lock() {
            // Findings are made from the remembered verdicts in place, under the lock (a few
            // short copies), rather than from a copy of the verdicts taken out first.
            if let Some(verdicts) = m.entries(language).get(text) {
                out.extend(verdicts.iter().map(|v| Finding {
                    severity: v.severity,
                    code: v.code,
                    path: path.as_str().to_string(),
                    message: v.message.clone(),
                    inner: v.inner,
                }));
                return;
            }
        }
    }
    let start = out.len();
    judge(text, path, out);
    if !cacheable {
        return;
    }
    let verdicts: Vec<Verdict> = out[start..]
        .iter()
        .map(|f| Verdict {
            severity: f.severity,
            code: f.code,
            message: f.message.clone(),
            inner: f.inner,
        })
        .collect();
    if let Ok(mut m) = memo().lock() {
        if m.bytes + text.len() > BUDGET_BYTES {
            m.lua.clear();
            m.cel.clear();
            m.bytes = 0;
        }
        m.bytes += text.len();
        m.entries(language).insert(text.to_string(), verdicts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_verdicts_per_text_and_reports_them_at_the_new_path() {
        let mut calls = 0;
        let mut judge = |_: &str, p: &FieldPath, out: &mut Vec<Finding>| {
            calls += 1;
            out.push(Finding::error("cel-syntax", p, "bad").at(1, 2));
        };
        let mut out = Vec::new();
        judged(
            Language::Cel,
            "memo-test ((",
            &FieldPath::root("a"),
            &mut out,
            &mut judge,
        );
        judged(
            Language::Cel,
            "memo-test ((",
            &FieldPath::root("b"),
            &mut out,
            &mut judge,
        );
        judged(
            Language::Lua,
            "memo-test ((",
            &FieldPath::root("c"),
            &mut out,
            &mut judge,
        );
        assert_eq!(calls, 2, "same text and language is judged once");
        assert_eq!(out[1].path, "b");
        assert_eq!(out[1].inner, Some((1, 2)));
        assert_eq!(out[1].message, "bad");
    }
}
