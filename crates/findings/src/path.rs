//! Field paths written the way the API server writes them: `spec.stages[1].trigger.auto.delay`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(String);

/// The bytes of a key written after a dot (ASCII letters, digits, `_`, `-`); any other key is
/// bracketed. A table, not `is_ascii_alphanumeric() || ...` per character: every key the engine
/// visits is checked, and the chain of comparisons was most of the cost of building paths.
/// Bytes, not chars: a byte of a multi-byte character is never ASCII, so the answer is the same.
static PLAIN_KEY_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        b += 1;
    }
    table
};

impl FieldPath {
    pub fn root(name: &str) -> Self {
        FieldPath(name.to_string())
    }

    pub fn key(&self, key: &str) -> Self {
        let plain = !key.is_empty() && key.bytes().all(|b| PLAIN_KEY_BYTE[usize::from(b)]);
        // Paths are built for every node the engine visits; plain pushes, not `format!`.
        let mut path = String::with_capacity(self.0.len() + key.len() + 2);
        path.push_str(&self.0);
        if plain {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
        } else {
            path.push('[');
            path.push_str(key);
            path.push(']');
        }
        FieldPath(path)
    }

    pub fn index(&self, i: usize) -> Self {
        use std::fmt::Write;
        let mut path = String::with_capacity(self.0.len() + 6);
        path.push_str(&self.0);
        path.push('[');
        // Most indices are one digit: pushed directly, as formatting machinery costs several
        // times more and this runs for every list item the engine visits.
        match u32::try_from(i).ok().and_then(|i| char::from_digit(i, 10)) {
            Some(digit) => path.push(digit),
            // Writing to a String cannot fail.
            None => {
                let _ = write!(path, "{i}");
            }
        }
        path.push(']');
        FieldPath(path)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0
    }
}

impl From<&FieldPath> for String {
    fn from(p: &FieldPath) -> String {
        p.0.clone()
    }
}

/// Split an API-server field path into JSON keys and indices: `a.b[2][x.y]` → a, b, 2, x.y.
pub fn segments(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            let inner = &after[..end];
            out.push(match inner.parse::<usize>() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(inner.to_string()),
            });
            rest = after.get(end + 1..).unwrap_or("");
        } else {
            let rest_trim = rest.strip_prefix('.').unwrap_or(rest);
            let end = rest_trim.find(['.', '[']).unwrap_or(rest_trim.len());
            out.push(Segment::Key(rest_trim[..end].to_string()));
            rest = &rest_trim[end..];
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_api_server_paths() {
        let p = FieldPath::root("spec")
            .key("stages")
            .index(1)
            .key("trigger");
        assert_eq!(p.as_str(), "spec.stages[1].trigger");
        assert_eq!(
            FieldPath::root("metadata")
                .key("annotations")
                .key("a.io/b")
                .as_str(),
            "metadata.annotations[a.io/b]"
        );
        let list = FieldPath::root("spec").key("stages");
        assert_eq!(list.index(0).as_str(), "spec.stages[0]");
        assert_eq!(list.index(9).as_str(), "spec.stages[9]");
        assert_eq!(list.index(10).as_str(), "spec.stages[10]");
        assert_eq!(
            list.index(usize::MAX).as_str(),
            format!("spec.stages[{}]", usize::MAX)
        );
        // Non-ASCII keys are bracketed like any key that is not a plain name.
        assert_eq!(list.key("né").as_str(), "spec.stages[né]");
        assert_eq!(list.key("").as_str(), "spec.stages[]");
    }

    #[test]
    fn plain_key_table_is_letters_digits_underscore_dash() {
        for b in 0..=u8::MAX {
            let expected = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
            assert_eq!(PLAIN_KEY_BYTE[usize::from(b)], expected, "byte {b}");
        }
    }

    #[test]
    fn splits_paths_back() {
        assert_eq!(
            segments("spec.stages[1].trigger[a.io/b]"),
            vec![
                Segment::Key("spec".into()),
                Segment::Key("stages".into()),
                Segment::Index(1),
                Segment::Key("trigger".into()),
                Segment::Key("a.io/b".into()),
            ]
        );
    }
}
