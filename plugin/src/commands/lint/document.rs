//! One file: its entries (documents and `List` items, as the one reader gives them), each
//! ClusterPromotion judged by the schema pass and the Sveltos
//! rules (`promotion_shared::validation::lint`), findings placed at their file positions.

use serde_json::Value;

use crd_schema::Crd;
use promotion_manifest::{Entry, Manifest};
use promotion_shared::model::is_cluster_promotion;
use promotion_shared::validation::lint;
use promotion_shared::validation::Finding;

use super::cross::Declared;
use super::inputs::{read_error, Tally};
use super::Located;

/// Whether lint judges an entry of a file (a ClusterPromotion) rather than skip it.
pub fn judges(entry: &Entry<'_>) -> bool {
    is_cluster_promotion(entry.value)
}

/// What `kubectl apply` refuses in one ClusterPromotion entry: lint's findings (the same lines,
/// merged as lint merges them) at the fields where the CRD's schema, which the API server
/// enforces on every write, has an error. `diff -f` states these before its diff, in lint's words.
pub fn apply_refusals(crd: &Crd, file: &str, entry: &Entry<'_>) -> Vec<Located> {
    let refused: Vec<String> = crd_schema::check(crd, entry.value)
        .into_findings()
        .into_iter()
        .filter(Finding::is_error)
        .map(|f| f.path)
        .collect();
    if refused.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Located> = lint(crd, entry.value)
        .into_iter()
        .filter(|f| f.is_error() && refused.contains(&f.path))
        .map(|f| locate(file, entry, f))
        .collect();
    found.sort_by_key(|f| (f.line, f.column));
    found
}

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

    /// One file's bytes: decoded by the one reader, or recorded as not YAML.
    pub(super) fn lint_bytes(&mut self, name: &str, bytes: &[u8]) {
        match Manifest::decode(name, bytes) {
            Ok(manifest) => self.lint_manifest(&manifest),
            Err(e) => {
                self.tally.not_yaml += 1;
                self.located.push(read_error(&e));
            }
        }
    }

    /// Each entry is a ClusterPromotion (a document or a `List` item), judged, or something
    /// else, skipped.
    fn lint_manifest(&mut self, manifest: &Manifest) {
        for entry in manifest.entries() {
            if judges(&entry) {
                self.lint_promotion(&manifest.source, &entry);
            } else {
                self.tally.skipped += 1;
            }
        }
    }

    fn lint_promotion(&mut self, file: &str, entry: &Entry<'_>) {
        self.tally.promotions += 1;
        let mut found: Vec<Located> = lint(self.crd, entry.value)
            .into_iter()
            .map(|f| locate(file, entry, f))
            .collect();
        // Reading order within the document; ties keep the engine's order.
        found.sort_by_key(|f| (f.line, f.column));
        self.located.extend(found);
        if let Some(declared) = declared(file, entry) {
            self.declared.push(declared);
        }
    }
}

fn locate(file: &str, entry: &Entry<'_>, f: Finding) -> Located {
    let pos = entry.locate(&f.path, f.inner);
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
fn declared(file: &str, entry: &Entry<'_>) -> Option<Declared> {
    let v = entry.value;
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
            let pos = entry.locate(&path, None);
            Some((stage_name, path, pos))
        })
        .collect();
    Some(Declared {
        file: file.to_string(),
        name_pos: entry.locate("metadata.name", None),
        name,
        stages,
    })
}
