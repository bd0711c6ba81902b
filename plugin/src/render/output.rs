//! Structured output (`-o json|yaml|name`; the template formats are in `printers`).

use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;

use promotion_shared::model::{GROUP, KIND};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_round_trips_json_values() {
        let v = json!({"a": "3.6.2", "b": true, "c": [1, 2], "d": "multi\nline\n", "e": "on"});
        let text = to_yaml(&v).unwrap();
        // Read back as kubectl reads it (go-yaml v2), where an unquoted `on` is a boolean.
        let back = promotion_manifest::parse_documents(&text)
            .unwrap()
            .remove(0)
            .value;
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
