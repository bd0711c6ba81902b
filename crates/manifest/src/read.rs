//! One reader for every `-f`, modelled on cli-runtime's visitor chain (`resource.Builder`):
//! a command-line input becomes sources (a file, the manifests of a directory, or stdin), each
//! source becomes bytes, the bytes become documents ([`parse_documents`]: go-yaml v2 scalars and
//! positions), and the documents become entries (`List`s opened into their items, empty
//! documents and items skipped).
//!
//! Every step reports its failure as a [`ReadError`] naming the input (and the document or
//! item) and the reason, so a command can stop at the first one or, as `lint` does, record it
//! and go on.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{parse_documents, position_of_byte, Pos, SourceDocument, SourceError};

/// How stdin is named in messages, as kubectl names it.
pub const STDIN_NAME: &str = "<stdin>";

/// The extensions a directory's manifests have (kubectl's `FileExtensions`).
pub const MANIFEST_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One input to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `-` on the command line.
    Stdin,
    /// A file named on the command line (whatever its extension) or found in a directory.
    File(PathBuf),
}

impl Source {
    /// The name messages give it: the path as given, or `<stdin>`.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => STDIN_NAME.to_string(),
            Source::File(path) => path.display().to_string(),
        }
    }
}

/// Why an input, a document or an item could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The path does not exist or the OS refused to read it; the OS reason, without its number.
    Unreadable(String),
    /// The bytes are not UTF-8: where the first invalid byte is.
    NotUtf8(Pos),
    /// The text is not YAML (nor JSON).
    Yaml(SourceError),
    /// A document or a `List` item that is not a mapping: where it is, and what it is.
    NotAnObject { at: String, found: &'static str },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The input's name ([`Source::name`], or the path as given on the command line).
    pub source: String,
    pub reason: Reason,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Unreadable(reason) => write!(f, "cannot read: {reason}"),
            Reason::NotUtf8(pos) => write!(f, "not valid UTF-8: at {pos}"),
            Reason::Yaml(e) => write!(f, "invalid YAML: {e}"),
            Reason::NotAnObject { at, found } if at.is_empty() => {
                write!(f, "expected a Kubernetes object, found {found}")
            }
            Reason::NotAnObject { at, found } => {
                write!(f, "{at}: expected a Kubernetes object, found {found}")
            }
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.reason)
    }
}

impl std::error::Error for ReadError {}

/// `No such file or directory (os error 2)` without the OS error number.
/// An I/O error in the words kubectl (Go) uses: `no such file or directory`, without Rust's
/// `(os error N)`.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        std::io::ErrorKind::InvalidData => "not valid UTF-8".into(),
        _ => {
            // `Other error (os error 5)` → `Other error`.
            let text = e.to_string();
            match text.rfind(" (os error ") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
    }
}

/// Reads command-line inputs. Stdin is read at most once: a second `-` is an error rather than
/// silently empty. `recursive` (kubectl's `-R`): a directory's subdirectories are read too.
pub struct Reader {
    stdin: Option<Box<dyn Read + Send>>,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("stdin_unread", &self.stdin.is_some())
            .finish()
    }
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader of the process's stdin.
    pub fn new() -> Self {
        Reader {
            stdin: Some(Box::new(std::io::stdin())),
        }
    }

    /// The same reader with `stdin` standing for the process's stdin.
    pub fn with_stdin(mut self, stdin: impl Read + Send + 'static) -> Self {
        self.stdin = Some(Box::new(stdin));
        self
    }

    /// The sources of one command-line input: `-` is stdin; a directory gives its manifests
    /// (`*.yaml`, `*.yml`, `*.json`; with `recursive`, in subdirectories too) in path order;
    /// anything else is read as a file whatever its name (a named pipe, `<(…)`, included). A
    /// path that does not exist, or a directory that cannot be listed, is an error in place.
    pub fn sources(&self, input: &Path, recursive: bool) -> Vec<Result<Source, ReadError>> {
        if input.as_os_str() == "-" {
            return vec![Ok(Source::Stdin)];
        }
        let unreadable = |path: &Path, e: &std::io::Error| ReadError {
            source: path.display().to_string(),
            reason: Reason::Unreadable(io_reason(e)),
        };
        match std::fs::metadata(input) {
            Err(e) => return vec![Err(unreadable(input, &e))],
            Ok(meta) if !meta.is_dir() => return vec![Ok(Source::File(input.to_path_buf()))],
            Ok(_) => {}
        }
        let mut files = Vec::new();
        let mut errors = Vec::new();
        let mut pending = vec![input.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => {
                    errors.push(Err(unreadable(&dir, &e)));
                    continue;
                }
            };
            for entry in entries.flatten() {
                let path = entry.path();
                // Follows symbolic links, as kubectl's filepath.Walk of a named directory does
                // for the named entries' types.
                if path.is_dir() {
                    if recursive {
                        pending.push(path);
                    }
                } else if is_manifest(&path) {
                    files.push(path);
                }
            }
        }
        // Path order compares components: a directory's files come before the files of its
        // subdirectories' siblings that sort after it (`a/x.yaml` before `a.yaml`), as a
        // depth-first walk of sorted entries gives them.
        files.sort();
        errors
            .into_iter()
            .chain(files.into_iter().map(|f| Ok(Source::File(f))))
            .collect()
    }

    /// The bytes of one source.
    pub fn read(&mut self, source: &Source) -> Result<Vec<u8>, ReadError> {
        let failed = |reason: String| ReadError {
            source: source.name(),
            reason: Reason::Unreadable(reason),
        };
        match source {
            Source::Stdin => {
                let mut stdin = self.stdin.take().ok_or_else(|| {
                    failed("stdin was already read (`-` may be given once)".into())
                })?;
                let mut bytes = Vec::new();
                stdin
                    .read_to_end(&mut bytes)
                    .map_err(|e| failed(io_reason(&e)))?;
                Ok(bytes)
            }
            Source::File(path) => std::fs::read(path).map_err(|e| failed(io_reason(&e))),
        }
    }

    /// Every manifest of every input, in order, each decoded; `visit` returns `false` to stop.
    pub fn visit(
        &mut self,
        inputs: &[PathBuf],
        recursive: bool,
        mut visit: impl FnMut(Result<Manifest, ReadError>) -> bool,
    ) {
        for input in inputs {
            for source in self.sources(input, recursive) {
                let manifest = source.and_then(|source| {
                    let bytes = self.read(&source)?;
                    Manifest::decode(&source.name(), &bytes)
                });
                if !visit(manifest) {
                    return;
                }
            }
        }
    }

    /// Every manifest of every input, or the first error.
    pub fn manifests(
        &mut self,
        inputs: &[PathBuf],
        recursive: bool,
    ) -> Result<Vec<Manifest>, ReadError> {
        let mut manifests = Vec::new();
        let mut failed = None;
        self.visit(inputs, recursive, |m| match m {
            Ok(m) => {
                manifests.push(m);
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(manifests),
        }
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e))
}

/// The documents of one source.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub source: String,
    /// Every document, empty ones (`Value::Null`) included, so that indexes are the file's.
    pub documents: Vec<SourceDocument>,
}

impl Manifest {
    /// Decode bytes read from `source`: UTF-8, then YAML (JSON is YAML) as kubectl reads it.
    pub fn decode(source: &str, bytes: &[u8]) -> Result<Manifest, ReadError> {
        let failed = |reason| ReadError {
            source: source.to_string(),
            reason,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| failed(Reason::NotUtf8(position_of_byte(bytes, e.valid_up_to()))))?;
        let documents = parse_documents(text).map_err(|e| failed(Reason::Yaml(e)))?;
        Ok(Manifest {
            source: source.to_string(),
            documents,
        })
    }

    /// The objects of the documents, in order: a `List` (`kind: List`, or any document with an
    /// `items` list, as kubectl's unstructured decoder takes it) gives its items; empty
    /// documents and items are skipped.
    pub fn entries(&self) -> Vec<Entry<'_>> {
        let several = self.documents.len() > 1;
        let mut entries = Vec::new();
        for (index, document) in self.documents.iter().enumerate() {
            let entry = |item, value| Entry {
                source: &self.source,
                document,
                index: several.then_some(index),
                item,
                value,
            };
            match &document.value {
                Value::Null => {}
                value if is_list(value) => {
                    let items = value.get("items").and_then(Value::as_array);
                    for (i, item) in items.into_iter().flatten().enumerate() {
                        if !item.is_null() {
                            entries.push(entry(Some(i), item));
                        }
                    }
                }
                value => entries.push(entry(None, value)),
            }
        }
        entries
    }
}

fn is_list(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("List")
        || value.get("items").is_some_and(Value::is_array)
}

/// One object of a manifest: a document, or an item of a `List` document.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub source: &'a str,
    pub document: &'a SourceDocument,
    /// The document's 0-based index, when the source has more than one document.
    pub index: Option<usize>,
    /// The item's index in the `List`.
    pub item: Option<usize>,
    pub value: &'a Value,
}

impl<'a> Entry<'a> {
    /// Where the entry is, for messages: `document 2, items[0]`, `items[0]`, `document 2`, or
    /// empty for the only document of a source.
    pub fn position(&self) -> String {
        match (self.index, self.item) {
            (Some(d), Some(i)) => format!("document {}, items[{i}]", d + 1),
            (Some(d), None) => format!("document {}", d + 1),
            (None, Some(i)) => format!("items[{i}]"),
            (None, None) => String::new(),
        }
    }

    /// The field-path prefix of the entry in its document: `items[0].` for a `List` item.
    pub fn prefix(&self) -> String {
        self.item
            .map(|i| format!("items[{i}]."))
            .unwrap_or_default()
    }

    /// Position of a field of the entry in the file (see [`SourceDocument::locate`]).
    pub fn locate(&self, path: &str, inner: Option<(usize, usize)>) -> Pos {
        self.document
            .locate(&format!("{}{path}", self.prefix()), inner)
    }

    /// The entry as an object, or an error naming where it is and what it is instead.
    pub fn object(&self) -> Result<&'a Map<String, Value>, ReadError> {
        self.value.as_object().ok_or_else(|| ReadError {
            source: self.source.to_string(),
            reason: Reason::NotAnObject {
                at: self.position(),
                found: json_type(self.value),
            },
        })
    }
}

/// A JSON value's kind in the words messages use: `a string`, `a list`, `an object`…
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        // The API server's word for a whole number (its schema types tell it from `number`).
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(m: &Manifest) -> Vec<Value> {
        m.entries().iter().map(|e| e.value.clone()).collect()
    }

    #[test]
    fn lists_are_opened_and_empty_documents_skipped() {
        let text =
            "# a comment\n---\na: 1\n---\nkind: List\nitems:\n- {b: 2}\n- null\n- {c: 3}\n---\n";
        let m = Manifest::decode("f.yaml", text.as_bytes()).unwrap();
        assert_eq!(
            values(&m),
            [json!({"a": 1}), json!({"b": 2}), json!({"c": 3})]
        );
        let positions: Vec<String> = m.entries().iter().map(Entry::position).collect();
        assert_eq!(
            positions,
            ["document 1", "document 2, items[0]", "document 2, items[2]"]
        );
        // A comment before the first `---` is no document; the empty one after the last is.
        assert_eq!(m.documents.len(), 3);
        let c = m.entries()[2];
        assert_eq!(c.locate("c", None), Pos { line: 9, column: 4 });
    }

    #[test]
    fn a_list_is_kubectls_list() {
        // Any kind with an `items` list is opened (kubectl's unstructured decoder); `kind: List`
        // without items is an empty list.
        let m = Manifest::decode("f", b"kind: SveltosClusterList\nitems: [{a: 1}]\n").unwrap();
        assert_eq!(values(&m), [json!({"a": 1})]);
        assert_eq!(m.entries()[0].position(), "items[0]");
        let m = Manifest::decode("f", b"kind: List\n").unwrap();
        assert!(m.entries().is_empty());
    }

    #[test]
    fn scalars_are_kubectls() {
        let m = Manifest::decode("f", b"a: on\nb: 0777\nc: \"on\"\nd: y\n").unwrap();
        assert_eq!(
            values(&m),
            [json!({"a": true, "b": 511, "c": "on", "d": true})]
        );
        let m = Manifest::decode("f", br#"{"a": [1, "x"], "b": {"c": null}}"#).unwrap();
        assert_eq!(values(&m), [json!({"a": [1, "x"], "b": {"c": null}})]);
    }

    #[test]
    fn errors_name_the_source_the_place_and_the_reason() {
        let e = Manifest::decode("bin.yaml", b"a: 1\nb: \xff\n").unwrap_err();
        assert_eq!(e.to_string(), "bin.yaml: not valid UTF-8: at 2:4");
        let e = Manifest::decode("bad.yaml", b"a: [1,\nb: 2\n").unwrap_err();
        assert!(e.to_string().starts_with("bad.yaml: invalid YAML: "), "{e}");
        let Reason::Yaml(inner) = &e.reason else {
            panic!("{e:?}")
        };
        assert_eq!(inner.pos.line, 2, "{e}");
        let m = Manifest::decode("s.yaml", b"a: 1\n---\njust text\n").unwrap();
        let e = m.entries()[1].object().unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.yaml: document 2: expected a Kubernetes object, found a string"
        );
        let m = Manifest::decode("l.yaml", b"kind: List\nitems: [3]\n").unwrap();
        let e = m.entries()[0].object().unwrap_err();
        assert_eq!(
            e.to_string(),
            "l.yaml: items[0]: expected a Kubernetes object, found an integer"
        );
    }

    #[test]
    fn directories_give_their_manifests_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("a")).unwrap();
        for f in ["b.yaml", "a.yml", "a/x.json", "a/notes.txt", "c.txt"] {
            std::fs::write(root.join(f), "k: v\n").unwrap();
        }
        let names = |recursive: bool| -> Vec<PathBuf> {
            Reader::new()
                .sources(root, recursive)
                .into_iter()
                .map(|s| match s.unwrap() {
                    Source::File(p) => p.strip_prefix(root).unwrap().to_path_buf(),
                    Source::Stdin => PathBuf::from("-"),
                })
                .collect()
        };
        assert_eq!(names(false), [PathBuf::from("a.yml"), "b.yaml".into()]);
        assert_eq!(
            names(true),
            [PathBuf::from("a/x.json"), "a.yml".into(), "b.yaml".into()]
        );
        // A file named on the command line is read whatever its extension.
        assert_eq!(
            Reader::new().sources(&root.join("c.txt"), false),
            [Ok(Source::File(root.join("c.txt")))]
        );
        let missing = root.join("missing.yaml");
        let found = Reader::new().sources(&missing, false);
        let [Err(e)] = found.as_slice() else {
            panic!("a missing path is an error: {found:?}")
        };
        assert_eq!(
            e.to_string(),
            format!(
                "{}: cannot read: no such file or directory",
                missing.display()
            )
        );
    }

    #[test]
    fn stdin_is_read_once() {
        let mut reader = Reader::new().with_stdin(&b"a: 1\n"[..]);
        let inputs = [PathBuf::from("-"), PathBuf::from("-")];
        let mut seen = Vec::new();
        reader.visit(&inputs, false, |m| {
            seen.push(m.map(|m| (m.source.clone(), m.documents.len())));
            true
        });
        assert_eq!(seen[0], Ok((STDIN_NAME.to_string(), 1)));
        let e = seen[1].clone().unwrap_err();
        assert_eq!(
            e.to_string(),
            "<stdin>: cannot read: stdin was already read (`-` may be given once)"
        );
    }

    #[test]
    fn manifests_stop_at_the_first_error() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        std::fs::write(&good, "a: 1\n").unwrap();
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "a: [\n").unwrap();
        let mut reader = Reader::new();
        assert_eq!(
            reader
                .manifests(std::slice::from_ref(&good), false)
                .unwrap()
                .len(),
            1
        );
        let e = reader.manifests(&[good, bad.clone()], false).unwrap_err();
        assert_eq!(e.source, bad.display().to_string());
    }
}
