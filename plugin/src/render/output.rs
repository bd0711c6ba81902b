//! Structured output (`-o json|yaml|name`; the template formats are in `printers`) and reading
//! manifests (`-f FILE`).

use std::io::Read;
use std::path::Path;

use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;

use promotion_shared::model::{is_cluster_promotion, GROUP, KIND};

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
/// `-o` for commands that print a computed model and offer no template (`version`, `plan`).
pub enum ModelFormat {
    Json,
    Yaml,
}

/// kubectl's resource/name form: `clusterpromotion.config.projectsveltos.io/NAME`.
pub fn resource_name(name: &str) -> String {
    format!("{}.{GROUP}/{name}", KIND.to_lowercase())
}

pub fn to_json<T: Serialize>(value: &T) -> Result<String> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|e| Error::Io(format!("JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}

pub fn to_yaml<T: Serialize>(value: &T) -> Result<String> {
    let text = serde_saphyr::to_string(value).map_err(|e| Error::Io(format!("YAML: {e}")))?;
    Ok(if text.ends_with('\n') {
        text
    } else {
        text + "\n"
    })
}

/// A copy with every object's members in key order (lists keep their order).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The object as kubectl shows it: without `metadata.managedFields` (noise for a person).
pub fn without_managed_fields(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    o
}

/// Read the ClusterPromotion from a manifest file ("-" is stdin). Multi-document YAML (and
/// `kind: List`) may hold other objects; exactly one ClusterPromotion must be there.
pub fn read_promotion(path: &Path) -> Result<Value> {
    let label = if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Error::file(&label, e))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::file(&label, e))?
    };
    parse_promotion(&text, &label)
}

pub fn parse_promotion(text: &str, label: &str) -> Result<Value> {
    let mut found = parse_promotions(text, label)?;
    match found.len() {
        0 => Err(Error::file(
            label,
            "no ClusterPromotion (apiVersion config.projectsveltos.io/v1beta1) in this file",
        )),
        1 => Ok(found.remove(0)),
        n => Err(Error::file(
            label,
            format!("{n} ClusterPromotions in this file; pass one at a time"),
        )),
    }
}

/// Every ClusterPromotion of a manifest text: its documents, and the items of `kind: List`
/// documents; other objects are skipped. Each must have a name.
pub fn parse_promotions(text: &str, label: &str) -> Result<Vec<Value>> {
    let docs: Vec<Value> = if text.trim_start().starts_with('{') {
        vec![serde_json::from_str(text)
            .map_err(|e| Error::file(label, format!("invalid JSON: {e}")))?]
    } else {
        serde_saphyr::from_multiple::<Value>(text)
            .map_err(|e| Error::file(label, format!("invalid YAML: {e}")))?
    };
    let mut found: Vec<Value> = Vec::new();
    for doc in docs {
        match doc.get("kind").and_then(Value::as_str) {
            Some("List") => {
                if let Some(items) = doc.get("items").and_then(Value::as_array) {
                    found.extend(items.iter().filter(|i| is_cluster_promotion(i)).cloned());
                }
            }
            _ if is_cluster_promotion(&doc) => found.push(doc),
            _ => {}
        }
    }
    for doc in &found {
        if doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(Error::file(
                label,
                "a ClusterPromotion in this file has no metadata.name",
            ));
        }
    }
    Ok(found)
}

/// The ClusterPromotions of a file ("-" is stdin) or of the manifests (`*.yaml`, `*.yml`,
/// `*.json`) in a directory, in file-name order, as `kubectl … -f DIR` reads them (`recursive`:
/// subdirectories too, as `-R`). Each comes with the file it was read from.
pub fn read_promotions(path: &Path, recursive: bool) -> Result<Vec<(String, Value)>> {
    let mut files = Vec::new();
    if path.is_dir() {
        let mut pending = vec![path.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|e| Error::file(dir.display(), e))?;
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    if recursive {
                        pending.push(p);
                    }
                } else if matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                ) {
                    files.push(p);
                }
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut out = Vec::new();
    for file in files {
        let label = if file == Path::new("-") {
            "<stdin>".to_string()
        } else {
            file.display().to_string()
        };
        let text = if file == Path::new("-") {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Error::file(&label, e))?;
            s
        } else {
            std::fs::read_to_string(&file).map_err(|e| Error::file(&label, e))?
        };
        for doc in parse_promotions(&text, &label)? {
            out.push((label.clone(), doc));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_promotion_among_other_documents() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
                    apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\n\
                    metadata:\n  name: p\nspec:\n  stages:\n  - name: dev\n    trigger:\n      auto:\n        delay: 2m\n";
        let v = parse_promotion(text, "f.yaml").unwrap();
        assert_eq!(v["metadata"]["name"], "p");
        assert_eq!(v["spec"]["stages"][0]["trigger"]["auto"]["delay"], "2m");
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let e = parse_promotion("kind: ConfigMap\n", "x.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.yaml: no ClusterPromotion"), "{e}");
        let e = parse_promotion("a: [\n", "y.yaml").unwrap_err().to_string();
        assert!(e.starts_with("y.yaml: invalid YAML"), "{e}");
        let two = "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata: {name: a}\n---\napiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterPromotion\nmetadata: {name: b}\n";
        assert!(parse_promotion(two, "z")
            .unwrap_err()
            .to_string()
            .contains("2 ClusterPromotions"));
    }

    #[test]
    fn yaml_round_trips_json_values() {
        let v = json!({"a": "3.6.2", "b": true, "c": [1, 2], "d": "multi\nline\n", "e": "on"});
        let text = to_yaml(&v).unwrap();
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn name_output_is_kubectl_form() {
        assert_eq!(
            resource_name("p"),
            "clusterpromotion.config.projectsveltos.io/p"
        );
    }
}
