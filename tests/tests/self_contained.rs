//! The repository stands on its own: no tracked file reads or cites a path outside it, so a
//! fresh clone with nothing beside it builds, tests and documents itself.
//!
//! Every tracked file (`git ls-files`; without git, a walk of the tree that skips `target` and
//! `.git`) is read as text. Each relative path in it (a token with a `.` or `..` segment) is
//! resolved the way its reader resolves it:
//! - Rust string literals: against the crate's folder (where cargo runs tests, benches and build
//!   scripts, and what `CARGO_MANIFEST_DIR` names), or the file's folder inside `include_str!`,
//!   `include_bytes!`, `include!` and `#[path = …]`; also against the workspace root next to a
//!   `workspace_root()` call. A literal that starts with `/` next to `CARGO_MANIFEST_DIR` (as in
//!   `concat!(env!("CARGO_MANIFEST_DIR"), "/x")`) is taken from the crate's folder.
//! - everything else (comments, Markdown, YAML, TOML, scripts): against the file's folder (and the
//!   crate's, for Rust comments); a path that names nothing there is read as written from the
//!   workspace root, the way the repository's documents cite files (`plugin/docs/lint.md`).
//!   `$PWD/x` is taken from the workspace root, `CARGO_MANIFEST_DIR/x` from the crate.
//! - scripts that start from their own location (`$(dirname "$0")/x`, Python's
//!   `Path(__file__).parent…`) are followed too, and so is the `.parent()` of `workspace_root()`.
//!
//! A path that climbs above the workspace root fails the test with its file, line and text. The
//! only exceptions are the lines below that tell a developer where this machine keeps the envtest
//! binaries, and `.ci/run`, CI's entry point, which looks for them there.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use regex::Regex;

/// The parent-folder segment, spelled apart so that this file's own examples are not paths.
const UP: &str = "..";

/// Files allowed to reach outside: CI's entry point finds the envtest binaries beside the
/// checkout.
const ALLOWED_FILES: &[&str] = &[".ci/run"];

/// Lines allowed to name a folder outside the repository, by file and exact (trimmed) text,
/// `{UP}` standing for the parent-folder segment: the hints saying where this machine keeps the
/// real kube-apiserver and etcd. Anything else that escapes fails, including a new hint.
const ALLOWED_LINES: &[(&str, &str)] = &[
    (
        "README.md",
        "KUBEBUILDER_ASSETS=$PWD/{UP}/shared/envtest/bin cargo test -p promotion-e2e --test scenarios --test controller_live",
    ),
    (
        "tests/README.md",
        "KUBEBUILDER_ASSETS=$PWD/{UP}/shared/envtest/bin cargo test -p promotion-e2e --test scenarios",
    ),
    (
        "tests/src/envtest/assets.rs",
        "(on the project's machines: KUBEBUILDER_ASSETS=$PWD/{UP}/shared/envtest/bin; elsewhere: \\",
    ),
];

/// One relative path that leaves the repository.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Escape {
    file: String,
    line: usize,
    path: String,
    /// What the path was resolved against.
    from: &'static str,
}

impl std::fmt::Display for Escape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}` (from {}) is outside the repository",
            self.file, self.line, self.path, self.from
        )
    }
}

/// A folder, as the list of its components below the workspace root.
type Dir = Vec<String>;

/// Resolve `path` lexically from `base`; `None` when it climbs above the root.
fn resolve(base: &[String], path: &str) -> Option<Dir> {
    let mut dir: Dir = base.to_vec();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                dir.pop()?;
            }
            name => dir.push(name.to_string()),
        }
    }
    Some(dir)
}

fn exists(root: &Path, dir: &[String]) -> bool {
    let mut p = root.to_path_buf();
    p.extend(dir);
    p.exists()
}

fn components(relative: &str) -> Dir {
    relative
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The folder holding `file` and the nearest folder above it with a `Cargo.toml` (the root when
/// none has one).
fn bases(root: &Path, file: &str) -> (Dir, Dir) {
    let mut dir = components(file);
    dir.pop();
    let mut krate = dir.clone();
    loop {
        let mut manifest = root.to_path_buf();
        manifest.extend(&krate);
        if manifest.join("Cargo.toml").is_file() || krate.is_empty() {
            break;
        }
        krate.pop();
    }
    (dir, krate)
}

/// Where a token says it starts, when it says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    Root,
    Crate,
}

/// The relative paths in `text`: tokens with a `.` or `..` segment, with the anchor a leading
/// `$PWD/` or `CARGO_MANIFEST_DIR/` gives them. URLs, absolute paths and paths from an unknown
/// variable are not relative paths of this repository.
fn relative_paths(text: &str) -> Vec<(Option<Anchor>, String)> {
    static TOKEN: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let token = TOKEN.get_or_init(|| Regex::new(r#"[^\s"'`()\[\]{},;=<>|*]+"#).expect("regex"));
    let mut out = Vec::new();
    for m in token.find_iter(text) {
        let mut t = m.as_str();
        if t.contains("://") {
            continue;
        }
        // A link's fragment names a heading, not a file.
        if let Some(hash) = t.find('#').filter(|&h| h > 0 && t[..h].contains('/')) {
            t = &t[..hash];
        }
        // Sentence punctuation after a path is not part of it.
        while let Some(last) = t.chars().last() {
            let keep_dot = t.ends_with("/.") || t.ends_with("/..") || t == "." || t == "..";
            if matches!(last, ':' | ',' | '!' | '?') || (last == '.' && !keep_dot) {
                t = &t[..t.len() - 1];
            } else {
                break;
            }
        }
        let mut anchor = None;
        for (prefix, a) in [
            ("$PWD/", Anchor::Root),
            ("${PWD}/", Anchor::Root),
            ("$(pwd)/", Anchor::Root),
            ("$CARGO_MANIFEST_DIR/", Anchor::Crate),
            ("${CARGO_MANIFEST_DIR}/", Anchor::Crate),
            ("CARGO_MANIFEST_DIR/", Anchor::Crate),
        ] {
            if let Some(rest) = t.strip_prefix(prefix) {
                anchor = Some(a);
                t = rest;
                break;
            }
        }
        if anchor.is_none() && (t.starts_with('/') || t.starts_with('$') || t.starts_with('~')) {
            continue;
        }
        let segments: Vec<&str> = t.split('/').collect();
        if segments
            .first()
            .is_some_and(|s| s.starts_with('…') || *s == "...")
        {
            continue;
        }
        if segments.len() > 1 && segments.iter().any(|s| *s == "." || *s == "..") {
            out.push((anchor, t.to_string()));
        }
    }
    out
}

/// A run of text in a Rust file: a comment, or a string literal with the code before it.
#[derive(Debug)]
enum Piece {
    Comment {
        line: usize,
        text: String,
    },
    Literal {
        line: usize,
        text: String,
        /// The code of the statement before the literal (literals included).
        before: String,
        /// The whole source line the literal starts on.
        line_text: String,
    },
}

/// Split Rust source into comments and string literals, one piece per line they cover.
fn rust_pieces(src: &str) -> Vec<Piece> {
    #[derive(PartialEq)]
    enum State {
        Code,
        LineComment,
        BlockComment(usize),
        Str,
        RawStr(usize),
    }
    let chars: Vec<char> = src.chars().collect();
    let mut pieces = Vec::new();
    let mut state = State::Code;
    let mut line = 1;
    let mut text = String::new();
    let mut start_line = 1;
    // The whole text of the literal being read (`text` holds only its current line).
    let mut literal = String::new();
    let mut code = String::new();
    let mut context = (String::new(), String::new());
    let flush = |pieces: &mut Vec<Piece>,
                 state: &State,
                 line: usize,
                 text: &mut String,
                 context: &(String, String)| {
        if text.is_empty() {
            return;
        }
        let t = std::mem::take(text);
        match state {
            State::LineComment | State::BlockComment(_) => {
                pieces.push(Piece::Comment { line, text: t })
            }
            State::Str | State::RawStr(_) => pieces.push(Piece::Literal {
                line,
                text: t,
                before: context.0.clone(),
                line_text: context.1.clone(),
            }),
            State::Code => {}
        }
    };
    // The end of the code of the current statement (after the last `;`, `{` or `}`).
    let statement = |code: &str| -> String {
        let start = code.len().saturating_sub(300);
        let start = (start..=code.len())
            .find(|&k| code.is_char_boundary(k))
            .unwrap_or(0);
        code[start..].to_string()
    };
    let line_of = |from: usize| -> String {
        let end = chars[from..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |p| from + p);
        chars[from..end].iter().collect()
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            flush(&mut pieces, &state, start_line, &mut text, &context);
            line += 1;
            start_line = line;
            if state == State::LineComment {
                state = State::Code;
            }
            if state == State::Code {
                code.push(' ');
            }
            i += 1;
            continue;
        }
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    state = State::LineComment;
                    start_line = line;
                    i += 2;
                    continue;
                }
                if c == '/' && next == Some('*') {
                    state = State::BlockComment(1);
                    start_line = line;
                    i += 2;
                    continue;
                }
                let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
                if c == 'r' && !ident_before || (c == 'b' && next == Some('r') && !ident_before) {
                    let mut j = i + if c == 'b' { 2 } else { 1 };
                    let mut hashes = 0;
                    while chars.get(j) == Some(&'#') {
                        hashes += 1;
                        j += 1;
                    }
                    if chars.get(j) == Some(&'"') && (c == 'b' || chars.get(i + 1) != Some(&'r')) {
                        state = State::RawStr(hashes);
                        start_line = line;
                        context = (statement(&code), line_of(i));
                        literal.clear();
                        i = j + 1;
                        continue;
                    }
                }
                if c == '"' {
                    state = State::Str;
                    start_line = line;
                    context = (statement(&code), line_of(i));
                    literal.clear();
                    i += 1;
                    continue;
                }
                if c == '\'' {
                    // A char literal ('x', '\n', '\''), or a lifetime.
                    if next == Some('\\') {
                        let close = chars[i + 2..].iter().position(|&c| c == '\'');
                        i = close.map_or(i + 1, |p| i + 2 + p + 1);
                        continue;
                    }
                    if chars.get(i + 2) == Some(&'\'') {
                        i += 3;
                        continue;
                    }
                }
                if matches!(c, ';' | '{' | '}') {
                    code.clear();
                } else {
                    code.push(c);
                }
                i += 1;
            }
            State::LineComment => {
                text.push(c);
                i += 1;
            }
            State::BlockComment(depth) => {
                if c == '*' && next == Some('/') {
                    flush(&mut pieces, &state, start_line, &mut text, &context);
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    i += 2;
                } else if c == '/' && next == Some('*') {
                    state = State::BlockComment(depth + 1);
                    i += 2;
                } else {
                    text.push(c);
                    i += 1;
                }
            }
            State::Str => {
                if c == '\\' {
                    if let Some(n) = next {
                        if n != '\n' {
                            text.push(n);
                            literal.push(n);
                        } else {
                            flush(&mut pieces, &state, start_line, &mut text, &context);
                            line += 1;
                            start_line = line;
                        }
                    }
                    i += 2;
                } else if c == '"' {
                    flush(&mut pieces, &state, start_line, &mut text, &context);
                    state = State::Code;
                    code.push_str(&format!("\"{literal}\""));
                    i += 1;
                } else {
                    text.push(c);
                    literal.push(c);
                    i += 1;
                }
            }
            State::RawStr(hashes) => {
                if c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    flush(&mut pieces, &state, start_line, &mut text, &context);
                    state = State::Code;
                    code.push_str(&format!("\"{literal}\""));
                    i += 1 + hashes;
                } else {
                    text.push(c);
                    literal.push(c);
                    i += 1;
                }
            }
        }
    }
    flush(&mut pieces, &state, start_line, &mut text, &context);
    pieces
}

/// What one file's paths are checked against.
struct FileCtx<'a> {
    root: &'a Path,
    file: &'a str,
    dir: Dir,
    krate: Dir,
    rust: bool,
}

impl FileCtx<'_> {
    fn escape(&self, line: usize, path: &str, from: &'static str) -> Escape {
        Escape {
            file: self.file.to_string(),
            line,
            path: path.to_string(),
            from,
        }
    }

    fn anchored(&self, anchor: Anchor) -> (&'static str, Dir) {
        match anchor {
            Anchor::Root => ("the workspace root", Vec::new()),
            Anchor::Crate => ("the crate's folder", self.krate.clone()),
        }
    }

    /// A path in prose: from the file's folder (and the crate's, in Rust); when it names
    /// nothing there, as written from the workspace root.
    fn prose(&self, line: usize, text: &str, out: &mut Vec<Escape>) {
        for (anchor, path) in relative_paths(text) {
            if let Some(anchor) = anchor {
                let (from, base) = self.anchored(anchor);
                if resolve(&base, &path).is_none() {
                    out.push(self.escape(line, &path, from));
                }
                continue;
            }
            let mut found = false;
            let mut candidates = vec![("the file's folder", &self.dir)];
            if self.rust {
                candidates.push(("the crate's folder", &self.krate));
            }
            for (from, base) in candidates {
                match resolve(base, &path) {
                    None => {
                        out.push(self.escape(line, &path, from));
                        found = true;
                        break;
                    }
                    Some(dir) if exists(self.root, &dir) => {
                        found = true;
                        break;
                    }
                    Some(_) => {}
                }
            }
            if !found && resolve(&[], &path).is_none() {
                out.push(self.escape(line, &path, "the workspace root"));
            }
        }
    }

    /// A path in a Rust string literal, read at run or build time.
    fn literal(
        &self,
        line: usize,
        text: &str,
        before: &str,
        line_text: &str,
        out: &mut Vec<Escape>,
    ) {
        let code = before.split_whitespace().collect::<String>();
        let included = ["include_str!(", "include_bytes!(", "include!(", "#[path="]
            .iter()
            .any(|m| code.ends_with(m));
        let manifest =
            before.contains("CARGO_MANIFEST_DIR") || line_text.contains("CARGO_MANIFEST_DIR");
        let mut paths = relative_paths(text);
        if manifest {
            // `concat!(env!("CARGO_MANIFEST_DIR"), "/x")`: the literal continues the crate path.
            for (anchor, path) in relative_paths(&format!("CARGO_MANIFEST_DIR{text}")) {
                if text.starts_with('/') {
                    paths.push((anchor, path));
                }
            }
        }
        for (anchor, path) in paths {
            let mut bases: Vec<(&'static str, Dir)> = match anchor {
                Some(a) => vec![self.anchored(a)],
                None if included => vec![("the file's folder", self.dir.clone())],
                None => vec![("the crate's folder", self.krate.clone())],
            };
            if anchor.is_none()
                && (before.contains("workspace_root") || line_text.contains("workspace_root"))
            {
                bases.push(("the workspace root", Vec::new()));
            }
            for (from, base) in bases {
                if resolve(&base, &path).is_none() {
                    out.push(self.escape(line, &path, from));
                    break;
                }
            }
        }
    }

    /// Code that starts from its own location and climbs: `$(dirname "$0")/x`,
    /// `Path(__file__).parent…`, and the `.parent()` of `workspace_root()`.
    fn self_relative(&self, text: &str, out: &mut Vec<Escape>) {
        static PATTERNS: std::sync::OnceLock<[Regex; 4]> = std::sync::OnceLock::new();
        let [dirname, file_var, file_expr, root_parent] = PATTERNS.get_or_init(|| {
            [
                Regex::new(r#"\$\(\s*dirname\s+"?\$(?:0|\{BASH_SOURCE\[0\]\}|\{0\})"?\s*\)(/[^\s"'`;|&)]*)"#)
                    .expect("regex"),
                Regex::new(r"(?m)^\s*(\w+)\s*=\s*(?:pathlib\.)?Path\(__file__\)(?:\.resolve\(\))?((?:\.parent)+)")
                    .expect("regex"),
                Regex::new(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent)+)").expect("regex"),
                Regex::new(r"workspace_root\(\)\s*\.parent\(\)").expect("regex"),
            ]
        });
        let line_at = |offset: usize| text[..offset].matches('\n').count() + 1;
        let up = |n: usize| vec![UP; n].join("/");
        for c in dirname.captures_iter(text) {
            let path = format!(".{}", &c[1]);
            if resolve(&self.dir, &path).is_none() {
                out.push(self.escape(
                    line_at(c.get(0).expect("match").start()),
                    &c[0],
                    "the script's folder",
                ));
            }
        }
        for c in file_expr.captures_iter(text) {
            // The first `.parent` is the file's folder.
            let levels = c[1].matches(".parent").count() - 1;
            if resolve(&self.dir, &up(levels)).is_none() {
                out.push(self.escape(
                    line_at(c.get(0).expect("match").start()),
                    &c[0],
                    "the script's folder",
                ));
            }
        }
        for c in file_var.captures_iter(text) {
            let levels = c[2].matches(".parent").count() - 1;
            let Some(var_dir) = resolve(&self.dir, &up(levels)) else {
                continue;
            };
            let uses =
                Regex::new(&format!(r"\b{}((?:\.parent)+)", regex::escape(&c[1]))).expect("regex");
            for u in uses.captures_iter(text) {
                let more = u[1].matches(".parent").count();
                if resolve(&var_dir, &up(more)).is_none() {
                    out.push(self.escape(
                        line_at(u.get(0).expect("match").start()),
                        &u[0],
                        "the script's folder",
                    ));
                }
            }
        }
        for m in root_parent.find_iter(text) {
            out.push(self.escape(line_at(m.start()), m.as_str(), "the workspace root"));
        }
    }
}

/// Every escape in `file` (a path relative to `root`), before exceptions.
fn scan_file(root: &Path, file: &str, text: &str) -> Vec<Escape> {
    let (dir, krate) = bases(root, file);
    let rust = file.ends_with(".rs");
    let ctx = FileCtx {
        root,
        file,
        dir,
        krate,
        rust,
    };
    let mut out = Vec::new();
    if rust {
        for piece in rust_pieces(text) {
            match piece {
                Piece::Comment { line, text } => ctx.prose(line, &text, &mut out),
                Piece::Literal {
                    line,
                    text,
                    before,
                    line_text,
                } => ctx.literal(line, &text, &before, &line_text, &mut out),
            }
        }
    } else {
        for (i, l) in text.lines().enumerate() {
            ctx.prose(i + 1, l, &mut out);
        }
    }
    ctx.self_relative(text, &mut out);
    out.sort_by(|a, b| (a.line, &a.path).cmp(&(b.line, &b.path)));
    out.dedup_by(|a, b| a.line == b.line && a.path == b.path);
    out
}

/// The files to check: what git tracks, or without git every file but `target/` and `.git/`.
fn files(root: &Path) -> Vec<String> {
    let listed = Command::new("git")
        .current_dir(root)
        .args(["ls-files", "-z"])
        .output()
        .ok()
        .filter(|o| o.status.success());
    match listed {
        Some(out) => String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|f| !f.is_empty() && root.join(f).is_file())
            .map(str::to_string)
            .collect(),
        None => walk(root),
    }
}

fn walk(root: &Path) -> Vec<String> {
    fn visit(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    visit(root, &path, out);
                }
            } else if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    visit(root, root, &mut out);
    out.sort();
    out
}

/// Every escape in the tree at `root`, exceptions applied.
fn scan(root: &Path, files: &[String]) -> Vec<Escape> {
    let allowed: BTreeMap<(&str, String), ()> = ALLOWED_LINES
        .iter()
        .map(|(f, l)| ((*f, l.replace("{UP}", UP)), ()))
        .collect();
    let mut out = Vec::new();
    for file in files {
        if ALLOWED_FILES.contains(&file.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue; // not text
        };
        let lines: Vec<&str> = text.lines().collect();
        for e in scan_file(root, file, &text) {
            let line = lines.get(e.line - 1).map_or("", |l| l.trim());
            if !allowed.contains_key(&(file.as_str(), line.to_string())) {
                out.push(e);
            }
        }
    }
    out
}

#[test]
fn no_tracked_file_reads_or_cites_a_path_outside_the_repository() {
    let root = promotion_e2e::bins::workspace_root();
    let files = files(&root);
    assert!(
        files.iter().any(|f| f == "Cargo.toml") && files.len() > 100,
        "the file list of {} looks wrong: {} files",
        root.display(),
        files.len()
    );
    let escapes = scan(&root, &files);
    let report: Vec<String> = escapes.iter().map(ToString::to_string).collect();
    assert!(
        escapes.is_empty(),
        "{} path(s) outside the repository (a fresh clone has nothing beside it):\n{}",
        escapes.len(),
        report.join("\n")
    );
}

#[test]
fn every_allowed_line_is_still_there_and_still_needs_its_exception() {
    let root = promotion_e2e::bins::workspace_root();
    for (file, line) in ALLOWED_LINES {
        let line = line.replace("{UP}", UP);
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("{file}, an allowed file: {e}"));
        let at = text
            .lines()
            .position(|l| l.trim() == line)
            .unwrap_or_else(|| {
                panic!("{file} no longer has the allowed line `{line}`: drop it from ALLOWED_LINES")
            });
        let found = scan_file(&root, file, &text);
        assert!(
            found.iter().any(|e| e.line == at + 1),
            "{file}:{}: `{line}` no longer leaves the repository: drop it from ALLOWED_LINES",
            at + 1
        );
    }
    for file in ALLOWED_FILES {
        assert!(
            root.join(file).is_file(),
            "{file}, an allowed file, is gone"
        );
    }
}

/// A small tree with one escape of each kind planted in it, and paths that stay inside.
fn planted_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let text = text.replace("{UP}", UP).replace("{PARENT}", "parent");
        std::fs::write(path, text).expect("write");
    };
    write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"plugin\", \"crates/a\"]\n",
    );
    write("examples/x.yaml", "a: 1\n");
    write(
        "plugin/Cargo.toml",
        "[package]\nname = \"plugin\"\n[dependencies]\na = { path = \"{UP}/crates/a\" }\n",
    );
    write(
        "crates/a/Cargo.toml",
        "[package]\nname = \"a\"\n[dependencies]\nb = { path = \"{UP}/{UP}/{UP}/b\" }\n",
    );
    write(
        "plugin/tests/reads.rs",
        concat!(
            "//! Reads the examples (`{UP}/examples`) and not `{UP}/shared/reference/x.md`.\n",
            "fn example() -> PathBuf {\n",
            "    PathBuf::from(env!(\"CARGO_MANIFEST_DIR\"))\n",
            "        .join(\"{UP}/{UP}/shared/examples\")\n",
            "}\n",
            "fn fine() -> PathBuf { PathBuf::from(env!(\"CARGO_MANIFEST_DIR\")).join(\"{UP}/examples\") }\n",
            "const A: &str = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{UP}/{UP}/elsewhere\");\n",
            "const B: &str = include_str!(\"{UP}/{UP}/examples/x.yaml\");\n",
            "const C: &str = \"a string with a // in it, then {UP}/{UP}/up\"; // comment {UP}/examples\n",
            "const D: char = '\"'; const E: &str = r#\"raw \"{UP}/{UP}/raw\"#;\n",
            "fn root() { workspace_root().join(\"{UP}/shared\"); workspace_root().{PARENT}(); }\n",
        ),
    );
    write(
        "docs/guide.md",
        concat!(
            "See [the examples]({UP}/examples/x.yaml) and `{UP}/shared/reference/x.md` §9.\n",
            "Run `KUBEBUILDER_ASSETS=$PWD/{UP}/bin cargo test` from the root.\n",
            "Links that climb: [out]({UP}/{UP}/out.md). A URL: https://example.com/{UP}/x.\n",
            "A heading: [h]({UP}/examples/x.yaml#a-heading); `{UP}` alone is no path.\n",
        ),
    );
    write(
        "scripts/run.sh",
        "cd \"$(dirname \"$0\")/{UP}\"\nsource \"$(dirname \"$0\")/{UP}/{UP}/env\"\n",
    );
    write(
        "fuzz/seeds.py",
        "ROOT = pathlib.Path(__file__).resolve().parent.parent\nP = ROOT.parent / \"shared/x.md\"\nQ = ROOT / \"examples\"\n",
    );
    dir
}

#[test]
fn planted_escapes_are_found_with_file_line_and_path_and_inside_paths_are_not() {
    let tree = planted_tree();
    let root = tree.path();
    // Not a git checkout: the walk finds the files.
    let files = files(root);
    assert!(
        files.contains(&"plugin/tests/reads.rs".to_string()),
        "{files:?}"
    );
    let found: Vec<(String, usize, String)> = scan(root, &files)
        .into_iter()
        .map(|e| (e.file, e.line, e.path))
        .collect();
    let up = |s: &str| s.replace("{UP}", UP).replace("{PARENT}", "parent");
    let expected: Vec<(String, usize, String)> = [
        ("crates/a/Cargo.toml", 4, "{UP}/{UP}/{UP}/b"),
        ("docs/guide.md", 1, "{UP}/shared/reference/x.md"),
        ("docs/guide.md", 2, "{UP}/bin"),
        ("docs/guide.md", 3, "{UP}/{UP}/out.md"),
        ("fuzz/seeds.py", 2, "ROOT.parent"),
        ("plugin/tests/reads.rs", 1, "{UP}/shared/reference/x.md"),
        ("plugin/tests/reads.rs", 4, "{UP}/{UP}/shared/examples"),
        ("plugin/tests/reads.rs", 7, "{UP}/{UP}/elsewhere"),
        ("plugin/tests/reads.rs", 9, "{UP}/{UP}/up"),
        ("plugin/tests/reads.rs", 10, "{UP}/{UP}/raw"),
        ("plugin/tests/reads.rs", 11, "workspace_root().{PARENT}()"),
        ("plugin/tests/reads.rs", 11, "{UP}/shared"),
        ("scripts/run.sh", 2, "$(dirname \"$0\")/{UP}/{UP}/env"),
    ]
    .iter()
    .map(|(f, l, p)| (f.to_string(), *l, up(p)))
    .collect();
    let mut found_sorted = found.clone();
    found_sorted.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(found_sorted, expected_sorted, "found: {found:#?}");
}

#[test]
fn an_allowed_line_is_not_reported_but_the_same_path_elsewhere_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let hint = ALLOWED_LINES[0].1.replace("{UP}", UP);
    std::fs::write(root.join("README.md"), format!("  {hint}\n`{hint}`\n")).expect("write");
    let files = vec!["README.md".to_string()];
    let found = scan(root, &files);
    // The exact line is allowed; the same text with anything else on the line is not.
    assert_eq!(
        found.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![2],
        "{found:#?}"
    );
}

#[test]
fn resolution_is_lexical_and_stops_at_the_root() {
    let base = components("plugin/tests");
    let up = |s: &str| s.replace("{UP}", UP);
    assert_eq!(
        resolve(&base, &up("{UP}/{UP}/examples")),
        Some(components("examples"))
    );
    assert_eq!(resolve(&base, &up("{UP}/{UP}/{UP}/shared")), None);
    assert_eq!(resolve(&[], &up("./a/./b/{UP}/c")), Some(components("a/c")));
    assert_eq!(resolve(&[], UP), None);
}
