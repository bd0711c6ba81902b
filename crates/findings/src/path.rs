//! Field paths written the way the API server writes them: `spec.stages[1].trigger.auto.delay`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    pub fn root(name: &str) -> Self {
        FieldPath(name.to_string())
    }

    pub fn key(&self, key: &str) -> Self {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
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
        // Writing to a String cannot fail.
        let _ = write!(path, "[{i}]");
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
