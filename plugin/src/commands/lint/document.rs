//! One file: its YAML documents, each ClusterPromotion judged by the schema pass and the Sveltos
//! rules (`promotion_shared::validation::lint`), findings placed at their file positions.

use serde_json::Value;

use crd_schema::Crd;
use promotion_manifest::{parse_documents, position_of_byte, SourceDocument};
use promotion_shared::model::is_cluster_promotion;
use promotion_shared::validation::lint;
use promotion_shared::validation::Finding;

use super::cross::Declared;
use super::inputs::{not_yaml, Tally};
use super::Located;

/// What one run accumulates.
pub(super) struct Run<'a> {
    pub crd: &'a Crd,
    pub located: Vec<Located>,
    pub tally: Tally,
    pub declared: Vec<Declared>,
}

impl<'a> Run<'a> {
    pub(super) fn new(crd: &'a Crd) -> Self {
        Run {
            crd,
            located: Vec::new(),
            tally: Tally::default(),
            declared: Vec::new(),
        }
    }

    pub(super) fn lint_bytes(&mut self, name: &str, bytes: &[u8]) {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                self.tally.not_yaml += 1;
                let pos = position_of_byte(bytes, e.valid_up_to());
                self.located.push(not_yaml(
                    name,
                    pos,
                    "invalid-utf8",
                    "file is not valid UTF-8".into(),
                ));
                return;
            }
        };
        let docs = match parse_documents(text) {
            Ok(d) => d,
            Err(e) => {
                self.tally.not_yaml += 1;
                self.located.push(not_yaml(
                    name,
                    e.pos,
                    "yaml",
                    format!("not valid YAML: {}", e.message),
                ));
                return;
            }
        };
        for doc in &docs {
            self.lint_document(name, doc);
        }
    }

    /// A document is a ClusterPromotion, a `List` holding some, or something else (skipped).
    fn lint_document(&mut self, file: &str, doc: &SourceDocument) {
        match &doc.value {
            Value::Null => {}
            v if is_cluster_promotion(v) => self.lint_promotion(file, doc, "", v),
            v if v.get("kind").and_then(Value::as_str) == Some("List") => {
                let items = v
                    .get("items")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                for (i, item) in items.iter().enumerate() {
                    if is_cluster_promotion(item) {
                        self.lint_promotion(file, doc, &format!("items[{i}]."), item);
                    } else {
                        self.tally.skipped += 1;
                    }
                }
            }
            _ => self.tally.skipped += 1,
        }
    }

    fn lint_promotion(&mut self, file: &str, doc: &SourceDocument, prefix: &str, v: &Value) {
        self.tally.promotions += 1;
        let mut found: Vec<Located> = lint(self.crd, v)
            .into_iter()
            .map(|f| locate(file, doc, prefix, f))
            .collect();
        // Reading order within the document; ties keep the engine's order.
        found.sort_by_key(|f| (f.line, f.column));
        self.located.extend(found);
        if let Some(declared) = declared(file, doc, prefix, v) {
            self.declared.push(declared);
        }
    }
}

fn locate(file: &str, doc: &SourceDocument, prefix: &str, f: Finding) -> Located {
    let pos = doc.locate(&format!("{prefix}{}", f.path), f.inner);
    Located {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        severity: f.severity,
        code: f.code,
        path: f.path,
        message: f.message,
    }
}

/// The promotion's name and stages, for the checks across documents.
fn declared(file: &str, doc: &SourceDocument, prefix: &str, v: &Value) -> Option<Declared> {
    let name = v.pointer("/metadata/name")?.as_str()?.to_string();
    let stages = v
        .pointer("/spec/stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, stage)| {
            let stage_name = stage.get("name")?.as_str()?.to_string();
            let path = format!("spec.stages[{i}].name");
            let pos = doc.locate(&format!("{prefix}{path}"), None);
            Some((stage_name, path, pos))
        })
        .collect();
    Some(Declared {
        file: file.to_string(),
        name_pos: doc.locate(&format!("{prefix}metadata.name"), None),
        name,
        stages,
    })
}
