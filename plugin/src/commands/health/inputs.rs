//! Offline inputs: the objects a check may select (`--object`) and metric query results
//! (`--metrics NAME=FILE`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use health_runtime::metrics;
use promotion_manifest::parse_documents;

use crate::error::{Error, Result};

/// Every object in the files and directories (recursively: *.yaml, *.yml, *.json), in path
/// order; `kind: List` documents contribute their items.
pub fn read_objects(paths: &[PathBuf]) -> Result<Vec<Value>> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| Error::file(file.display(), e))?;
        let docs = parse_documents(&text).map_err(|e| Error::file(file.display(), e))?;
        for doc in docs {
            match doc.value {
                Value::Null => {}
                Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                    if let Some(items) = m.get("items").and_then(Value::as_array) {
                        objects.extend(items.iter().filter(|i| i.is_object()).cloned());
                    }
                }
                Value::Object(_) => objects.push(doc.value),
                _ => {
                    return Err(Error::file(
                        file.display(),
                        format!("{}: a document is not a Kubernetes object", doc.start),
                    ))
                }
            }
        }
    }
    Ok(objects)
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::file(path.display(), e))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::file(path.display(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            collect(&e, out)?;
        } else if e
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        {
            out.push(e);
        }
    }
    Ok(())
}

/// `NAME=FILE`: the query name and the number its Prometheus response holds.
pub fn metric(spec: &str) -> Result<(String, f64)> {
    let (name, file) = spec
        .split_once('=')
        .filter(|(n, f)| !n.is_empty() && !f.is_empty())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--metrics {spec:?}: expected NAME=FILE (a Prometheus instant-query response)"
            ))
        })?;
    let body = std::fs::read_to_string(file).map_err(|e| Error::file(file, e))?;
    let value = metrics::scalar(&body).map_err(|e| Error::file(file, e))?;
    Ok((name.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_from_files_lists_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(
            dir.path().join("sub/c.json"),
            r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let objects = read_objects(&[dir.path().to_path_buf()]).unwrap();
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        let e = read_objects(&[dir.path().join("missing.yaml")]).unwrap_err();
        assert!(e.to_string().contains("missing.yaml"), "{e}");
    }

    #[test]
    fn metrics_need_name_and_file() {
        assert!(metric("errors")
            .unwrap_err()
            .to_string()
            .contains("NAME=FILE"));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.json");
        std::fs::write(
            &f,
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2.5"]}}"#,
        )
        .unwrap();
        assert_eq!(
            metric(&format!("errors={}", f.display())).unwrap(),
            ("errors".to_string(), 2.5)
        );
    }
}
